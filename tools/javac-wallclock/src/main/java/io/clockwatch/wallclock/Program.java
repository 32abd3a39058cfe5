package io.clockwatch.wallclock;

import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.Tree;
import com.sun.source.util.Trees;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.lang.model.element.Element;
import javax.tools.Diagnostic;

/**
 * The whole compilation as the analysis sees it: every class's flows of readings and the places
 * where two readings meet, collected class by class (in whatever order javac analyses them) and
 * solved together once javac is done. Fields, parameters and results cross classes this way, and
 * the findings are the same for any order of the files on javac's command line.
 */
final class Program {
    private final Map<Element, Kind> kinds = new HashMap<>();
    private final Set<Element> counters = new HashSet<>();
    private final List<Runnable> flows = new ArrayList<>();
    private final List<Check> checks = new ArrayList<>();
    private boolean changed;

    /** Where two readings may meet; what it is decided once every class is in. */
    record Check(
            Tree tree,
            CompilationUnitTree cu,
            String file,
            long pos,
            String what, // "binary", "between" or "compare"
            String op, // a binary's tree kind
            Ir.Expr a,
            Ir.Expr b,
            boolean ordering, // a min, max or clamp: never a deadline
            String text,
            String directive) {} // null: none; "": silenced; else a note to add

    void counter(Element e) {
        counters.add(e);
    }

    void flow(Element target, Ir.Expr value) {
        if (target != null) {
            flows.add(() -> set(target, classify(value)));
        }
    }

    /**
     * What the implementation m returns, a call of the method it overrides returns too; and what a
     * call of the overridden method passes to a parameter (here m is that parameter), the
     * implementation's parameter receives.
     */
    void override(Element m, Element overridden, Element overriddenMethod, boolean timeTyped) {
        flows.add(
                () -> {
                    if (timeTyped || ownMethod(overriddenMethod)) {
                        set(overridden, kindOf(m));
                    }
                });
    }

    /** The top-level classes javac has analysed in this compilation. */
    private final Set<Element> compiled = new HashSet<>();

    void compiled(Element type) {
        compiled.add(type);
    }

    /**
     * Whether a method (or a parameter of one) may take what its implementations return: not a
     * method of the platform's own types outside this compilation ({@code Collection.size()}, {@code
     * Comparable.compareTo}), which every class implements for its own meaning, unless its type is
     * a time's (a {@code long}, an {@code Instant}, a {@code Date}: {@code SSLSession.getCreationTime()});
     * a library's interface (commons-pool's {@code PooledObject}) may.
     */
    private boolean ownMethod(Element e) {
        Element top = e;
        while (top.getEnclosingElement() != null && top.getEnclosingElement().getKind() != javax.lang.model.element.ElementKind.PACKAGE) {
            top = top.getEnclosingElement();
        }
        if (compiled.contains(top)) {
            return true;
        }
        String pkg = top.getEnclosingElement() == null ? "" : top.getEnclosingElement().toString();
        return !(pkg.startsWith("java.") || pkg.startsWith("javax.") || pkg.startsWith("jdk.")
                || pkg.startsWith("sun.") || pkg.startsWith("com.sun."));
    }

    void call(Ir.Call c, List<? extends Element> params, Element storeTarget) {
        flows.add(
                () -> {
                    // Arguments into parameters: of any class in this compilation, analysed before or after.
                    for (int i = 0; i < c.args().size() && !params.isEmpty(); i++) {
                        set(params.get(Math.min(i, params.size() - 1)), classify(c.args().get(i)));
                    }
                    // Stores into atomics, maps and collections.
                    if (storeTarget != null && !c.args().isEmpty()) {
                        set(storeTarget, classify(c.args().get(c.args().size() - 1)));
                    }
                });
    }

    void check(Check c) {
        checks.add(c);
    }

    Kind kindOf(Element e) {
        if (e == null || counters.contains(e)) {
            return Kind.NONE;
        }
        return kinds.getOrDefault(e, Kind.NONE);
    }

    private void set(Element e, Kind k) {
        if (e == null || k == Kind.NONE) {
            return;
        }
        Kind old = kinds.getOrDefault(e, Kind.NONE);
        Kind now = Kind.join(old, k);
        if (now != old) {
            kinds.put(e, now);
            changed = true;
        }
    }

    /** Runs the flows to their fixpoint and reports the checks, in file and position order. */
    void solve(Trees trees, Diagnostic.Kind level, boolean ambiguous) {
        // Each round can only raise a kind, so it ends; the cap is a guard.
        for (int i = 0; i < 64; i++) {
            changed = false;
            flows.forEach(Runnable::run);
            if (!changed) {
                break;
            }
        }
        checks.sort(Comparator.comparing(Check::file).thenComparingLong(Check::pos));
        for (Check c : checks) {
            String msg = finding(c, ambiguous);
            if (msg == null || "".equals(c.directive())) {
                continue;
            }
            if (c.directive() != null) {
                msg += c.directive();
            }
            boolean amb = msg.startsWith(AMBIGUOUS);
            trees.printMessage(
                    amb ? Diagnostic.Kind.WARNING : level,
                    "[" + WallClockPlugin.NAME + (amb ? " ambiguous] " + msg.substring(AMBIGUOUS.length()) : "] " + msg),
                    c.tree(),
                    c.cu());
        }
        flows.clear();
        checks.clear();
    }

    private static final String AMBIGUOUS = "\0ambiguous";

    private String finding(Check c, boolean ambiguous) {
        switch (c.what()) {
            case "binary":
                if (classify(c.a()) != Kind.WALL || classify(c.b()) != Kind.WALL) {
                    return null;
                }
                if (c.op().equals("MINUS")) {
                    return c.text() + " subtracts two wall-clock readings: a clock step changes this"
                            + " elapsed time by the step (a 12 s step back makes it 12 s short or negative);"
                            + " time it with System.nanoTime() or a ScheduledExecutorService, which a step does"
                            + " not move";
                }
                if (c.ordering()) {
                    return null; // a min, a max or a clamp
                }
                if (!c.a().current() && !c.b().current()) {
                    if (!ambiguous) {
                        return null;
                    }
                    return AMBIGUOUS + c.text() + " orders two stored wall-clock readings: if it checks a"
                            + " deadline, a clock step moves it by the step; if it only orders them, a step does"
                            + " not matter (-Xplugin:\"WallClock noambiguous\" turns this category off)";
                }
                return c.text() + " compares wall-clock readings for a deadline or an expiry: a"
                        + " clock step back postpones it by the step, a step forward brings it early; keep"
                        + " the deadline as System.nanoTime() + timeout and test"
                        + " System.nanoTime() - deadline >= 0";
            case "between":
                if (classify(c.a()) != Kind.INSTANT || classify(c.b()) != Kind.INSTANT) {
                    return null;
                }
                break;
            case "compare":
                if (classify(c.a()) != Kind.INSTANT || classify(c.b()) != Kind.INSTANT
                        || !c.a().current() && !c.b().current()) {
                    return null;
                }
                break;
            default:
                return null;
        }
        return c.text() + " measures between two wall-clock instants: a clock step changes"
                + " the result by the step; time it with System.nanoTime(), or keep a"
                + " System.nanoTime() deadline";
    }

    // ---- what an expression is

    Kind classify(Ir.Expr e) {
        if (e instanceof Ir.Ref) {
            return kindOf(((Ir.Ref) e).target());
        }
        if (e instanceof Ir.Elem) {
            return classify(((Ir.Elem) e).array());
        }
        if (e instanceof Ir.Cond) {
            Ir.Cond c = (Ir.Cond) e;
            return Kind.join(classify(c.t()), classify(c.f()));
        }
        if (e instanceof Ir.Assign) {
            return classify(((Ir.Assign) e).value());
        }
        if (e instanceof Ir.Bin) {
            Ir.Bin b = (Ir.Bin) e;
            switch (b.op()) {
                case "PLUS":
                case "MULTIPLY":
                    return (classify(b.l()) == Kind.WALL) != (classify(b.r()) == Kind.WALL) ? Kind.WALL : Kind.NONE;
                case "MINUS":
                case "DIVIDE":
                    return classify(b.l()) == Kind.WALL && classify(b.r()) != Kind.WALL ? Kind.WALL : Kind.NONE;
                default:
                    return Kind.NONE;
            }
        }
        if (e instanceof Ir.Call) {
            return classifyCall((Ir.Call) e);
        }
        if (e instanceof Ir.New) {
            return classifyNew((Ir.New) e);
        }
        return Kind.NONE;
    }

    private Kind arg(Ir.Call c, int i) {
        return i < c.args().size() ? classify(c.args().get(i)) : Kind.NONE;
    }

    private Kind classifyNew(Ir.New nc) {
        switch (nc.type()) {
            case "java.util.Date":
            case "java.sql.Timestamp":
            case "java.util.GregorianCalendar":
                if (nc.args().isEmpty()) {
                    return Kind.INSTANT;
                }
                return nc.args().size() == 1 && classify(nc.args().get(0)) == Kind.WALL ? Kind.INSTANT : Kind.NONE;
            default:
                return Kind.NONE;
        }
    }

    private static final Set<String> NOW_TYPES =
            Set.of(
                    "java.time.Instant", "java.time.LocalDateTime", "java.time.ZonedDateTime",
                    "java.time.OffsetDateTime", "java.time.LocalTime", "java.time.OffsetTime");

    private Kind classifyCall(Ir.Call c) {
        String owner = c.owner();
        String name = c.name();
        if (owner.equals("java.lang.System") && name.equals("currentTimeMillis")) {
            return Kind.WALL;
        }
        if (name.equals("now") && NOW_TYPES.contains(owner)) {
            return Kind.INSTANT;
        }
        if (owner.equals("java.time.Clock") || owner.equals("java.time.InstantSource")) {
            if (name.equals("millis")) {
                return Kind.WALL;
            }
            if (name.equals("instant")) {
                return Kind.INSTANT;
            }
        }
        if (owner.equals("java.util.Calendar") && name.equals("getInstance")) {
            return Kind.INSTANT;
        }
        if ((owner.equals("java.time.Instant") && name.startsWith("ofEpoch"))
                || (name.equals("from") && (owner.equals("java.util.Date") || owner.equals("java.sql.Timestamp")))) {
            return arg(c, 0).local() ? Kind.INSTANT : Kind.NONE;
        }
        if (owner.equals("java.util.concurrent.TimeUnit") && name.startsWith("to")
                || owner.equals("java.lang.Long") && name.equals("valueOf")) {
            return arg(c, 0) == Kind.WALL ? Kind.WALL : Kind.NONE;
        }
        if (owner.equals("java.lang.Math") && (name.equals("max") || name.equals("min"))) {
            return Kind.join(arg(c, 0), arg(c, 1));
        }
        Kind rk = c.recv() == null ? Kind.NONE : classify(c.recv());
        if (rk == Kind.INSTANT) {
            switch (name) {
                case "toEpochMilli":
                case "getEpochSecond":
                case "getTimeInMillis":
                case "toEpochSecond":
                    return Kind.WALL;
                case "getTime":
                    return owner.equals("java.util.Calendar") ? Kind.INSTANT : Kind.WALL;
                case "toInstant":
                case "truncatedTo":
                case "atZone":
                case "atOffset":
                case "toLocalDateTime":
                case "clone":
                    return Kind.INSTANT;
                default:
                    if (name.startsWith("plus") || name.startsWith("minus") || name.startsWith("with")) {
                        return Kind.INSTANT;
                    }
                    return Kind.NONE;
            }
        }
        if (rk.local() && Analyzer.LOADS.contains(name)) {
            return rk;
        }
        return Kind.join(c.clock(), kindOf(c.method()));
    }
}
