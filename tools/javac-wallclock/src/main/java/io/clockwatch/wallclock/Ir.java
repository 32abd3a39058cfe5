package io.clockwatch.wallclock;

import java.util.List;
import javax.lang.model.element.Element;

/**
 * The part of a class's expressions that the analysis needs, taken when javac has attributed the
 * class and before it lowers the tree: the analysis of the whole compilation runs at its end, on
 * this, so that its result does not depend on the order javac analyses the classes in.
 */
final class Ir {
    private Ir() {}

    /** An expression. {@code current} says whether it is a reading taken for the computation at hand. */
    interface Expr {
        boolean current();
    }

    /** Anything the analysis does not follow: a constant, a lambda, an operator it does not model. */
    static final Expr OTHER = () -> true;

    /**
     * A variable, a field, a parameter; {@code target} is null for data fields (decoded or
     * persisted values) and names that are not variables.
     */
    record Ref(Element target, boolean current) implements Expr {}

    /** An element of an array: stored, and of the kind its array holds. */
    record Elem(Expr array) implements Expr {
        @Override
        public boolean current() {
            return false;
        }
    }

    record Cond(Expr t, Expr f) implements Expr {
        @Override
        public boolean current() {
            return t.current() || f.current();
        }
    }

    /** The value of an assignment expression. */
    record Assign(Expr value) implements Expr {
        @Override
        public boolean current() {
            return value.current();
        }
    }

    /** A binary operation: {@code op} is the tree's kind (PLUS, MINUS, LESS_THAN, ...). */
    record Bin(String op, Expr l, Expr r) implements Expr {
        @Override
        public boolean current() {
            return l.current() || r.current();
        }
    }

    /**
     * A method invocation: the method, its declaring type's name, the receiver (null for a static
     * or unqualified call), the arguments, and what the method is by its shape alone when it is a
     * clock behind an interface (an abstract {@code long currentTimeMillis()}, {@code Instant
     * instant()}).
     */
    record Call(Element method, String owner, String name, Expr recv, List<Expr> args, boolean current, Kind clock)
            implements Expr {}

    /** An instance creation: the type's name and the arguments. */
    record New(String type, List<Expr> args) implements Expr {
        @Override
        public boolean current() {
            return true;
        }
    }
}
