package io.clockwatch.wallclock;

import com.sun.source.tree.ArrayAccessTree;
import com.sun.source.tree.AssignmentTree;
import com.sun.source.tree.BinaryTree;
import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.ConditionalExpressionTree;
import com.sun.source.tree.EnhancedForLoopTree;
import com.sun.source.tree.ExpressionTree;
import com.sun.source.tree.IdentifierTree;
import com.sun.source.tree.LambdaExpressionTree;
import com.sun.source.tree.MemberSelectTree;
import com.sun.source.tree.MethodInvocationTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.NewClassTree;
import com.sun.source.tree.ParenthesizedTree;
import com.sun.source.tree.ReturnTree;
import com.sun.source.tree.Tree;
import com.sun.source.tree.TypeCastTree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.lang.model.element.AnnotationMirror;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.TypeElement;
import javax.lang.model.element.VariableElement;
import javax.tools.Diagnostic;

/**
 * The analysis of one top-level class: a flow-insensitive propagation of readings into locals,
 * fields, parameters, containers and method results, then a scan for the places where two of them
 * meet in a subtraction, a comparison or a java.time comparison.
 */
final class Analyzer {
    /** The line directive, as in {@code // clockwatch:wallclock-ok the TTL is persisted}. */
    static final Pattern DIRECTIVE = Pattern.compile("//\\s*clockwatch:wallclock-ok\\b(.*)$");

    /** Annotations that mark a field as data that comes from elsewhere (decoded or persisted). */
    private static final Set<String> DATA_ANNOTATIONS =
            Set.of(
                    "JsonProperty", "JsonAlias", "SerializedName", "Column", "XmlElement",
                    "XmlAttribute", "Id", "BsonProperty", "JsonbProperty", "JsonField");

    private static final Set<String> NOW_TYPES =
            Set.of(
                    "java.time.Instant", "java.time.LocalDateTime", "java.time.ZonedDateTime",
                    "java.time.OffsetDateTime", "java.time.LocalTime", "java.time.OffsetTime");

    /** Methods that store their last argument into the container they are called on. */
    private static final Set<String> STORES =
            Set.of(
                    "set", "lazySet", "setPlain", "setRelease", "setOpaque", "getAndSet", "compareAndSet",
                    "weakCompareAndSet", "weakCompareAndSetPlain", "compareAndExchange", "put",
                    "putIfAbsent", "replace", "add", "offer", "addFirst", "addLast", "push",
                    "offerFirst", "offerLast");

    /** Methods that read an element back from the container they are called on. */
    private static final Set<String> LOADS =
            Set.of(
                    "get", "getPlain", "getAcquire", "getOpaque", "getAndSet", "longValue", "intValue",
                    "getOrDefault", "remove", "poll", "peek", "pollFirst", "peekFirst", "pollLast",
                    "peekLast", "getFirst", "getLast", "take", "element", "orElse", "orElseThrow",
                    "join", "getNow");

    /** Methods that implement a value's ordering; see Checker.visitMethod. */
    private static final Set<String> COMPARATORS =
            Set.of("compareTo", "compare", "equals", "hashCode", "before", "after", "isBefore", "isAfter");

    private final Trees trees;
    private final CompilationUnitTree cu;
    private final ClassTree root;
    private final Facts facts;
    private final Diagnostic.Kind level;

    private final Map<Tree, Element> elements = new IdentityHashMap<>();
    private final Map<Element, Kind> kinds = new HashMap<>();
    private final List<Runnable> flows = new ArrayList<>();
    /** Variables incremented with ++ or --: counters and sequence numbers, even when seeded from the clock. */
    private final Set<Element> counters = new java.util.HashSet<>();
    private boolean changed;

    Analyzer(Trees trees, CompilationUnitTree cu, ClassTree root, Facts facts, Diagnostic.Kind level) {
        this.trees = trees;
        this.cu = cu;
        this.root = root;
        this.facts = facts;
        this.level = level;
    }

    void run() {
        TreePath rootPath = trees.getPath(cu, root);
        if (rootPath == null) {
            return;
        }
        new Collector().scan(rootPath, null);
        for (int i = 0; i < 32; i++) {
            changed = false;
            flows.forEach(Runnable::run);
            if (!changed) {
                break;
            }
        }
        // Pass fields and method results on to the classes analysed after this one, except
        // from the JDK's own time types: their meaning is modelled above, and what their
        // source says (new Date() reads the clock, so Date.getTime() "returns a reading") would
        // make every Date a local reading (a false alarm in docs/audit.md).
        String self = rootName();
        if (MODELLED.contains(self) || self.startsWith("java.time.")) {
            new Checker(lines()).scan(rootPath, null);
            return;
        }
        kinds.forEach(
                (e, k) -> {
                    if ((e.getKind() == ElementKind.FIELD || e.getKind() == ElementKind.METHOD) && !counters.contains(e)) {
                        facts.put(e, k);
                    }
                });
        new Checker(lines()).scan(rootPath, null);
    }

    private String rootName() {
        Element e = trees.getElement(trees.getPath(cu, root));
        return e instanceof TypeElement ? ((TypeElement) e).getQualifiedName().toString() : "";
    }

    private static final Set<String> MODELLED =
            Set.of("java.util.Date", "java.sql.Timestamp", "java.util.Calendar", "java.util.GregorianCalendar",
                    "java.lang.System");

    private String[] lines() {
        try {
            return cu.getSourceFile().getCharContent(true).toString().split("\n", -1);
        } catch (IOException e) {
            return new String[0];
        }
    }

    // ---- kinds of elements

    private Kind kindOf(Element e) {
        if (e == null || counters.contains(e)) {
            return Kind.NONE;
        }
        Kind k = kinds.get(e);
        return k != null ? k : facts.get(e);
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

    private static boolean dataField(Element e) {
        if (e.getKind() != ElementKind.FIELD) {
            return false;
        }
        for (AnnotationMirror am : e.getAnnotationMirrors()) {
            if (DATA_ANNOTATIONS.contains(am.getAnnotationType().asElement().getSimpleName().toString())) {
                return true;
            }
        }
        return false;
    }

    /** The variable an assignment to {@code e} writes, or the container of an element. */
    private Element target(ExpressionTree e) {
        e = unparen(e);
        if (e instanceof IdentifierTree || e instanceof MemberSelectTree) {
            Element el = elements.get(e);
            if (el instanceof VariableElement && !dataField(el)) {
                return el;
            }
            return null;
        }
        if (e instanceof ArrayAccessTree) {
            return target(((ArrayAccessTree) e).getExpression());
        }
        return null;
    }

    private static ExpressionTree unparen(ExpressionTree e) {
        while (true) {
            if (e instanceof ParenthesizedTree) {
                e = ((ParenthesizedTree) e).getExpression();
            } else if (e instanceof TypeCastTree) {
                e = ((TypeCastTree) e).getExpression();
            } else {
                return e;
            }
        }
    }

    private static String owner(Element method) {
        Element o = method.getEnclosingElement();
        return o instanceof TypeElement ? ((TypeElement) o).getQualifiedName().toString() : "";
    }

    private static ExpressionTree receiver(MethodInvocationTree mit) {
        ExpressionTree sel = mit.getMethodSelect();
        return sel instanceof MemberSelectTree ? ((MemberSelectTree) sel).getExpression() : null;
    }

    private Kind arg(MethodInvocationTree mit, int i) {
        return i < mit.getArguments().size() ? classify(mit.getArguments().get(i)) : Kind.NONE;
    }

    // ---- what an expression is

    Kind classify(ExpressionTree e) {
        if (e == null) {
            return Kind.NONE;
        }
        e = unparen(e);
        switch (e.getKind()) {
            case IDENTIFIER:
            case MEMBER_SELECT:
                return kindOf(target(e));
            case ARRAY_ACCESS:
                return classify(((ArrayAccessTree) e).getExpression());
            case CONDITIONAL_EXPRESSION:
                ConditionalExpressionTree c = (ConditionalExpressionTree) e;
                return Kind.join(classify(c.getTrueExpression()), classify(c.getFalseExpression()));
            case ASSIGNMENT:
                return classify(((AssignmentTree) e).getExpression());
            case PLUS:
            case MULTIPLY:
                {
                    BinaryTree b = (BinaryTree) e;
                    boolean l = classify(b.getLeftOperand()) == Kind.WALL;
                    boolean r = classify(b.getRightOperand()) == Kind.WALL;
                    return l != r ? Kind.WALL : Kind.NONE;
                }
            case MINUS:
            case DIVIDE:
                {
                    BinaryTree b = (BinaryTree) e;
                    boolean l = classify(b.getLeftOperand()) == Kind.WALL;
                    boolean r = classify(b.getRightOperand()) == Kind.WALL;
                    return l && !r ? Kind.WALL : Kind.NONE;
                }
            case METHOD_INVOCATION:
                return classifyCall((MethodInvocationTree) e);
            case NEW_CLASS:
                return classifyNew((NewClassTree) e);
            default:
                return Kind.NONE;
        }
    }

    private Kind classifyNew(NewClassTree nc) {
        Element ctor = elements.get(nc);
        if (ctor == null) {
            return Kind.NONE;
        }
        String type = owner(ctor);
        switch (type) {
            case "java.util.Date":
            case "java.sql.Timestamp":
            case "java.util.GregorianCalendar":
                if (nc.getArguments().isEmpty()) {
                    return Kind.INSTANT;
                }
                return nc.getArguments().size() == 1 && classify(nc.getArguments().get(0)) == Kind.WALL
                        ? Kind.INSTANT
                        : Kind.NONE;
            default:
                return Kind.NONE;
        }
    }

    private Kind classifyCall(MethodInvocationTree mit) {
        Element el = elements.get(mit);
        if (!(el instanceof ExecutableElement)) {
            return Kind.NONE;
        }
        String owner = owner(el);
        String name = el.getSimpleName().toString();
        if (owner.equals("java.lang.System") && name.equals("currentTimeMillis")) {
            return Kind.WALL;
        }
        if (name.equals("now") && NOW_TYPES.contains(owner)) {
            return Kind.INSTANT;
        }
        if (owner.equals("java.time.Clock")) {
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
            Kind a = arg(mit, 0);
            return a.local() ? Kind.INSTANT : Kind.NONE;
        }
        if (owner.equals("java.util.concurrent.TimeUnit") && name.startsWith("to")
                || owner.equals("java.lang.Long") && name.equals("valueOf")) {
            return arg(mit, 0) == Kind.WALL ? Kind.WALL : Kind.NONE;
        }
        if (owner.equals("java.lang.Math") && (name.equals("max") || name.equals("min"))) {
            return Kind.join(arg(mit, 0), arg(mit, 1));
        }
        ExpressionTree recv = receiver(mit);
        Kind rk = recv == null ? Kind.NONE : classify(recv);
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
        if (rk.local() && LOADS.contains(name)) {
            return rk;
        }
        return kindOf(el);
    }

    /**
     * Whether e is a reading taken for the computation at hand: a call, or a local variable or
     * parameter, rather than a value stored in a field or an array. A deadline check compares such
     * a reading ("now") with a stored one; comparing two stored ones only orders them.
     */
    private boolean current(ExpressionTree e) {
        e = unparen(e);
        switch (e.getKind()) {
            case IDENTIFIER:
                {
                    Element el = elements.get(e);
                    return el != null && el.getKind() != ElementKind.FIELD;
                }
            case MEMBER_SELECT:
                {
                    Element el = elements.get(e);
                    return el != null && el.getKind() != ElementKind.FIELD;
                }
            case ARRAY_ACCESS:
                return false;
            case METHOD_INVOCATION:
                {
                    MethodInvocationTree mit = (MethodInvocationTree) e;
                    Element el = elements.get(mit);
                    ExpressionTree recv = receiver(mit);
                    if (el != null && LOADS.contains(el.getSimpleName().toString()) && recv != null) {
                        return current(recv); // lastHeartbeat.get() is stored
                    }
                    return true;
                }
            case CONDITIONAL_EXPRESSION:
                {
                    ConditionalExpressionTree c = (ConditionalExpressionTree) e;
                    return current(c.getTrueExpression()) || current(c.getFalseExpression());
                }
            default:
                if (e instanceof BinaryTree) {
                    BinaryTree b = (BinaryTree) e;
                    return current(b.getLeftOperand()) || current(b.getRightOperand());
                }
                return true;
        }
    }

    // ---- pass 1: where readings flow

    private final class Collector extends TreePathScanner<Void, Void> {
        // The enclosing methods; null stands for a lambda, whose returns are not its method's.
        private final List<Element> methods = new ArrayList<>();

        @Override
        public Void scan(Tree tree, Void p) {
            if (tree instanceof ExpressionTree || tree instanceof VariableTree || tree instanceof MethodTree) {
                if (tree instanceof IdentifierTree
                        || tree instanceof MemberSelectTree
                        || tree instanceof MethodInvocationTree
                        || tree instanceof NewClassTree
                        || tree instanceof VariableTree
                        || tree instanceof MethodTree) {
                    TreePath path = new TreePath(getCurrentPath(), tree);
                    Element el = trees.getElement(path);
                    if (el != null) {
                        elements.put(tree, el);
                    }
                }
            }
            return super.scan(tree, p);
        }

        @Override
        public Void visitMethod(MethodTree mt, Void p) {
            methods.add(elements.get(mt));
            try {
                return super.visitMethod(mt, p);
            } finally {
                methods.remove(methods.size() - 1);
            }
        }

        @Override
        public Void visitLambdaExpression(LambdaExpressionTree lt, Void p) {
            methods.add(null);
            try {
                return super.visitLambdaExpression(lt, p);
            } finally {
                methods.remove(methods.size() - 1);
            }
        }

        @Override
        public Void visitVariable(VariableTree vt, Void p) {
            if (vt.getInitializer() != null) {
                ExpressionTree init = vt.getInitializer();
                flows.add(() -> set(dataField(elements.get(vt)) ? null : elements.get(vt), classify(init)));
            }
            return super.visitVariable(vt, p);
        }

        @Override
        public Void visitAssignment(AssignmentTree at, Void p) {
            flows.add(() -> set(target(at.getVariable()), classify(at.getExpression())));
            return super.visitAssignment(at, p);
        }

        @Override
        public Void visitEnhancedForLoop(EnhancedForLoopTree ft, Void p) {
            flows.add(() -> set(elements.get(ft.getVariable()), classify(ft.getExpression())));
            return super.visitEnhancedForLoop(ft, p);
        }

        @Override
        public Void visitUnary(com.sun.source.tree.UnaryTree ut, Void p) {
            super.visitUnary(ut, p); // first, so that the operand's element is known
            switch (ut.getKind()) {
                case PREFIX_INCREMENT:
                case POSTFIX_INCREMENT:
                case PREFIX_DECREMENT:
                case POSTFIX_DECREMENT:
                    Element t = target(ut.getExpression());
                    if (t != null) {
                        counters.add(t);
                    }
                    break;
                default:
                    break;
            }
            return null;
        }

        @Override
        public Void visitReturn(ReturnTree rt, Void p) {
            Element m = methods.isEmpty() ? null : methods.get(methods.size() - 1);
            if (m != null && rt.getExpression() != null) {
                flows.add(() -> set(m, classify(rt.getExpression())));
            }
            return super.visitReturn(rt, p);
        }

        @Override
        public Void visitMethodInvocation(MethodInvocationTree mit, Void p) {
            flows.add(() -> flowCall(mit));
            return super.visitMethodInvocation(mit, p);
        }
    }

    private void flowCall(MethodInvocationTree mit) {
        Element el = elements.get(mit);
        if (!(el instanceof ExecutableElement)) {
            return;
        }
        ExecutableElement m = (ExecutableElement) el;
        List<? extends ExpressionTree> args = mit.getArguments();
        // Arguments into the parameters of methods whose source is being compiled.
        List<? extends VariableElement> params = m.getParameters();
        for (int i = 0; i < args.size() && !params.isEmpty(); i++) {
            VariableElement param = params.get(Math.min(i, params.size() - 1));
            set(param, classify(args.get(i)));
        }
        // Stores into atomics, maps and collections.
        ExpressionTree recv = receiver(mit);
        if (recv != null && !args.isEmpty() && STORES.contains(m.getSimpleName().toString())) {
            set(target(recv), classify(args.get(args.size() - 1)));
        }
    }

    // ---- pass 2: findings

    private final class Checker extends TreePathScanner<Void, Void> {
        private final String[] lines;
        private int suppressed;

        Checker(String[] lines) {
            this.lines = lines;
        }

        private boolean suppresses(Tree t) {
            Element e = elements.get(t);
            if (e == null && t instanceof ClassTree) {
                e = trees.getElement(getCurrentPath());
            }
            if (e == null) {
                return false;
            }
            SuppressWarnings sw = e.getAnnotation(SuppressWarnings.class);
            if (sw == null) {
                return false;
            }
            for (String v : sw.value()) {
                if (v.equals(WallClockPlugin.NAME)) {
                    return true;
                }
            }
            return false;
        }

        private Void declaration(Tree t, java.util.function.Supplier<Void> body) {
            boolean s = suppresses(t);
            if (s) {
                suppressed++;
            }
            try {
                return body.get();
            } finally {
                if (s) {
                    suppressed--;
                }
            }
        }

        @Override
        public Void visitClass(ClassTree ct, Void p) {
            return declaration(ct, () -> super.visitClass(ct, p));
        }

        @Override
        public Void visitMethod(MethodTree mt, Void p) {
            // A value type's own comparison methods compare the values their callers hand
            // them (java.util.Date.before compares two Dates): the caller is where a reading
            // would meet "now", and that call is checked there.
            boolean comparator = COMPARATORS.contains(mt.getName().toString());
            if (comparator) {
                suppressed++;
            }
            try {
                return declaration(mt, () -> super.visitMethod(mt, p));
            } finally {
                if (comparator) {
                    suppressed--;
                }
            }
        }

        @Override
        public Void visitVariable(VariableTree vt, Void p) {
            return declaration(vt, () -> super.visitVariable(vt, p));
        }

        @Override
        public Void visitBinary(BinaryTree b, Void p) {
            if (classify(b.getLeftOperand()) == Kind.WALL && classify(b.getRightOperand()) == Kind.WALL) {
                switch (b.getKind()) {
                    case MINUS:
                        report(b, render(b) + " subtracts two wall-clock readings: a clock step changes this"
                                + " elapsed time by the step (a 12 s step back makes it 12 s short or negative);"
                                + " time it with System.nanoTime() or a ScheduledExecutorService, which a step does"
                                + " not move");
                        break;
                    case LESS_THAN:
                    case LESS_THAN_EQUAL:
                    case GREATER_THAN:
                    case GREATER_THAN_EQUAL:
                        if (!current(b.getLeftOperand()) && !current(b.getRightOperand()) || keepsMinOrMax(b)) {
                            break; // ordering two deadlines (a timer's heap, a min or max), not a check
                        }
                        report(b, render(b) + " compares wall-clock readings for a deadline or an expiry: a"
                                + " clock step back postpones it by the step, a step forward brings it early; keep"
                                + " the deadline as System.nanoTime() + timeout and test"
                                + " System.nanoTime() - deadline >= 0");
                        break;
                    default:
                        break;
                }
            }
            return super.visitBinary(b, p);
        }

        @Override
        public Void visitMethodInvocation(MethodInvocationTree mit, Void p) {
            Element el = elements.get(mit);
            if (el instanceof ExecutableElement) {
                String owner = owner(el);
                String name = el.getSimpleName().toString();
                boolean between =
                        name.equals("between")
                                && (owner.equals("java.time.Duration")
                                        || owner.equals("java.time.temporal.ChronoUnit")
                                        || owner.equals("java.time.temporal.TemporalUnit"));
                boolean compare =
                        Set.of("isBefore", "isAfter", "compareTo", "before", "after", "until").contains(name);
                if (between && arg(mit, 0) == Kind.INSTANT && arg(mit, 1) == Kind.INSTANT
                        || compare && classify(receiver(mit)) == Kind.INSTANT && arg(mit, 0) == Kind.INSTANT
                                && (current(receiver(mit)) || current(mit.getArguments().get(0)))) {
                    report(mit, render(mit) + " measures between two wall-clock instants: a clock step changes"
                            + " the result by the step; time it with System.nanoTime(), or keep a"
                            + " System.nanoTime() deadline");
                }
            }
            return super.visitMethodInvocation(mit, p);
        }

        /**
         * Whether the comparison b only picks the new value of one of its operands: {@code if (a
         * < next) next = a;} or {@code last = (now < last) ? last + 1 : now;}. That is a min, a
         * max or a clamp of two deadlines (java.rmi.server.UID survives a step back this way).
         */
        private boolean keepsMinOrMax(BinaryTree b) {
            Element l = operand(b.getLeftOperand());
            Element r = operand(b.getRightOperand());
            if (l == null && r == null) {
                return false;
            }
            TreePath path = getCurrentPath().getParentPath();
            while (path != null && path.getLeaf() instanceof ParenthesizedTree) {
                path = path.getParentPath();
            }
            if (path == null) {
                return false;
            }
            Tree parent = path.getLeaf();
            List<Element> assigned = new ArrayList<>();
            if (parent instanceof com.sun.source.tree.IfTree) {
                com.sun.source.tree.StatementTree then = ((com.sun.source.tree.IfTree) parent).getThenStatement();
                List<? extends com.sun.source.tree.StatementTree> stmts =
                        then instanceof com.sun.source.tree.BlockTree
                                ? ((com.sun.source.tree.BlockTree) then).getStatements()
                                : List.of(then);
                for (com.sun.source.tree.StatementTree st : stmts) {
                    if (st instanceof com.sun.source.tree.ExpressionStatementTree
                            && ((com.sun.source.tree.ExpressionStatementTree) st).getExpression() instanceof AssignmentTree) {
                        assigned.add(target(((AssignmentTree) ((com.sun.source.tree.ExpressionStatementTree) st).getExpression()).getVariable()));
                    }
                }
            } else if (parent instanceof ConditionalExpressionTree) {
                TreePath up = path.getParentPath();
                while (up != null && up.getLeaf() instanceof ParenthesizedTree) {
                    up = up.getParentPath();
                }
                if (up != null && up.getLeaf() instanceof AssignmentTree) {
                    assigned.add(target(((AssignmentTree) up.getLeaf()).getVariable()));
                } else if (up != null && up.getLeaf() instanceof VariableTree) {
                    assigned.add(elements.get(up.getLeaf()));
                }
            }
            for (Element a : assigned) {
                if (a != null && (a.equals(l) || a.equals(r))) {
                    return true;
                }
            }
            return false;
        }

        private Element operand(ExpressionTree e) {
            e = unparen(e);
            return e instanceof IdentifierTree || e instanceof MemberSelectTree ? target(e) : null;
        }

        private void report(Tree t, String msg) {
            if (suppressed > 0) {
                return;
            }
            long pos = trees.getSourcePositions().getStartPosition(cu, t);
            int line = pos < 0 ? -1 : (int) cu.getLineMap().getLineNumber(pos);
            for (int l : new int[] {line, line - 1}) {
                if (l < 1 || l > lines.length) {
                    continue;
                }
                Matcher m = DIRECTIVE.matcher(lines[l - 1]);
                if (m.find()) {
                    if (!m.group(1).isBlank()) {
                        return;
                    }
                    msg += " (the clockwatch:wallclock-ok on line " + l + " needs a reason to silence this)";
                }
            }
            trees.printMessage(level, "[" + WallClockPlugin.NAME + "] " + msg, t, cu);
        }
    }

    private static String render(Tree t) {
        String s = t.toString().replaceAll("\\s+", " ");
        return s.length() > 80 ? s.substring(0, 77) + "..." : s;
    }
}
