package io.clockwatch.wallclock;

import java.util.HashMap;
import java.util.Map;
import javax.lang.model.element.Element;

/**
 * What the classes analysed so far in this javac run hold in their fields and return from their
 * methods, so that a later class that reads them knows (javac analyses classes in the order of its
 * work list, so a class compiled before its users passes its readings on; one compiled after does
 * not).
 */
final class Facts {
    private final Map<Element, Kind> kinds = new HashMap<>();

    Kind get(Element e) {
        return kinds.getOrDefault(e, Kind.NONE);
    }

    void put(Element e, Kind k) {
        if (k != Kind.NONE) {
            kinds.merge(e, k, Kind::join);
        }
    }
}
