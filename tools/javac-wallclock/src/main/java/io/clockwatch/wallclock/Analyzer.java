package io.clockwatch.wallclock;

import com.sun.source.tree.ArrayAccessTree;
import com.sun.source.tree.AssignmentTree;
import com.sun.source.tree.BinaryTree;
import com.sun.source.tree.BlockTree;
import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.ConditionalExpressionTree;
import com.sun.source.tree.EnhancedForLoopTree;
import com.sun.source.tree.ExpressionStatementTree;
import com.sun.source.tree.ExpressionTree;
import com.sun.source.tree.IdentifierTree;
import com.sun.source.tree.IfTree;
import com.sun.source.tree.LambdaExpressionTree;
import com.sun.source.tree.MemberSelectTree;
import com.sun.source.tree.MethodInvocationTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.NewClassTree;
import com.sun.source.tree.ParenthesizedTree;
import com.sun.source.tree.ReturnTree;
import com.sun.source.tree.StatementTree;
import com.sun.source.tree.Tree;
import com.sun.source.tree.TypeCastTree;
import com.sun.source.tree.UnaryTree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.lang.model.element.AnnotationMirror;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.Modifier;
import javax.lang.model.element.TypeElement;
import javax.lang.model.element.VariableElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;
import javax.lang.model.util.Elements;
import javax.lang.model.util.Types;

/**
 * Takes one top-level class, attributed by javac, into the {@link Program}: where readings flow
 * (locals, fields, parameters, containers, results, overridden methods) and the places where two of
 * them may meet in a subtraction, a comparison or a java.time comparison. Nothing is decided here:
 * the program solves every class together at the end of the compilation.
 */
final class Analyzer {
    /** The line directive, as in {@code // clockwatch:wallclock-ok the TTL is persisted}. */
    static final Pattern DIRECTIVE = Pattern.compile("//\\s*clockwatch:wallclock-ok\\b(.*)$");

    /** Annotations that mark a field as data that comes from elsewhere (decoded or persisted). */
    private static final Set<String> DATA_ANNOTATIONS =
            Set.of(
                    "JsonProperty", "JsonAlias", "SerializedName", "Column", "XmlElement",
                    "XmlAttribute", "Id", "BsonProperty", "JsonbProperty", "JsonField");

    /** Methods that store their last argument into the container they are called on. */
    private static final Set<String> STORES =
            Set.of(
                    "set", "lazySet", "setPlain", "setRelease", "setOpaque", "getAndSet", "compareAndSet",
                    "weakCompareAndSet", "weakCompareAndSetPlain", "compareAndExchange", "put",
                    "putIfAbsent", "replace", "add", "offer", "addFirst", "addLast", "push",
                    "offerFirst", "offerLast");

    /** Methods that read an element back from the container they are called on. */
    static final Set<String> LOADS =
            Set.of(
                    "get", "getPlain", "getAcquire", "getOpaque", "getAndSet", "longValue", "intValue",
                    "getOrDefault", "remove", "poll", "peek", "pollFirst", "peekFirst", "pollLast",
                    "peekLast", "getFirst", "getLast", "take", "element", "orElse", "orElseThrow",
                    "join", "getNow");

    /** Methods that implement a value's ordering: a value type's own comparison is not checked. */
    private static final Set<String> COMPARATORS =
            Set.of("compareTo", "compare", "equals", "hashCode", "before", "after", "isBefore", "isAfter");

    /** The JDK's time types: their meaning is modelled, and their bodies pass nothing on. */
    private static final Set<String> MODELLED =
            Set.of("java.util.Date", "java.sql.Timestamp", "java.util.Calendar", "java.util.GregorianCalendar",
                    "java.lang.System");

    /**
     * Abstract methods that are clocks by their name and type when no implementation is compiled
     * with them: {@code long currentTimeMillis()}, {@code Instant instant()}, ...
     */
    private static final Set<String> CLOCK_MILLIS = Set.of("currentTimeMillis", "currentWallTime", "millis", "milliseconds", "wallTime");

    private static final Set<String> CLOCK_INSTANT = Set.of("instant", "now");

    private final Trees trees;
    private final Elements elementUtils;
    private final Types types;
    private final CompilationUnitTree cu;
    private final ClassTree root;
    private final Program program;

    private final Map<Tree, Element> elements = new IdentityHashMap<>();
    /**
     * Local variables initialised with a deadline computed from a reading ({@code then =
     * now.plus(keepAlive)}, {@code end = start + timeout}) and never assigned again: not "now".
     */
    private final Set<Element> deadlines = new HashSet<>();
    private final Set<Element> reassigned = new HashSet<>();
    private boolean modelled;

    Analyzer(Trees trees, Elements elementUtils, Types types, CompilationUnitTree cu, ClassTree root, Program program) {
        this.trees = trees;
        this.elementUtils = elementUtils;
        this.types = types;
        this.cu = cu;
        this.root = root;
        this.program = program;
    }

    void run() {
        TreePath rootPath = trees.getPath(cu, root);
        if (rootPath == null) {
            return;
        }
        Element self = trees.getElement(rootPath);
        String name = self instanceof TypeElement ? ((TypeElement) self).getQualifiedName().toString() : "";
        modelled = MODELLED.contains(name) || name.startsWith("java.time.");
        program.compiled(self);
        new Elements_().scan(rootPath, null);
        new Builder(lines()).scan(rootPath, null);
    }

    private String[] lines() {
        try {
            return cu.getSourceFile().getCharContent(true).toString().split("\n", -1);
        } catch (IOException e) {
            return new String[0];
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

    /** Where a flow may write: in the JDK's modelled time types, only locals and parameters. */
    private Element writable(Element e) {
        if (e == null || modelled && (e.getKind() == ElementKind.FIELD || e.getKind() == ElementKind.METHOD)) {
            return null;
        }
        return e;
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

    // ---- the expression as the program sees it

    Ir.Expr ir(ExpressionTree e) {
        if (e == null) {
            return Ir.OTHER;
        }
        e = unparen(e);
        switch (e.getKind()) {
            case IDENTIFIER:
            case MEMBER_SELECT:
                {
                    Element el = elements.get(e);
                    boolean deadline = el != null && deadlines.contains(el) && !reassigned.contains(el);
                    return new Ir.Ref(target(e), el != null && el.getKind() != ElementKind.FIELD && !deadline);
                }
            case ARRAY_ACCESS:
                return new Ir.Elem(ir(((ArrayAccessTree) e).getExpression()));
            case CONDITIONAL_EXPRESSION:
                {
                    ConditionalExpressionTree c = (ConditionalExpressionTree) e;
                    return new Ir.Cond(ir(c.getTrueExpression()), ir(c.getFalseExpression()));
                }
            case ASSIGNMENT:
                return new Ir.Assign(ir(((AssignmentTree) e).getExpression()));
            case METHOD_INVOCATION:
                {
                    Ir.Call c = call((MethodInvocationTree) e);
                    return c != null ? c : Ir.OTHER;
                }
            case NEW_CLASS:
                {
                    NewClassTree nc = (NewClassTree) e;
                    Element ctor = elements.get(nc);
                    return ctor == null ? Ir.OTHER : new Ir.New(owner(ctor), irs(nc.getArguments()));
                }
            default:
                if (e instanceof BinaryTree) {
                    BinaryTree b = (BinaryTree) e;
                    return new Ir.Bin(b.getKind().name(), ir(b.getLeftOperand()), ir(b.getRightOperand()));
                }
                return Ir.OTHER;
        }
    }

    private List<Ir.Expr> irs(List<? extends ExpressionTree> es) {
        List<Ir.Expr> out = new ArrayList<>(es.size());
        for (ExpressionTree a : es) {
            out.add(ir(a));
        }
        return out;
    }

    private Ir.Call call(MethodInvocationTree mit) {
        Element el = elements.get(mit);
        if (!(el instanceof ExecutableElement)) {
            return null;
        }
        ExecutableElement m = (ExecutableElement) el;
        String name = m.getSimpleName().toString();
        ExpressionTree recvTree = receiver(mit);
        Ir.Expr recv = recvTree == null ? null : ir(recvTree);
        boolean current = recv == null || !LOADS.contains(name) || recv.current(); // lastHeartbeat.get() is stored
        return new Ir.Call(m, owner(m), name, recv, irs(mit.getArguments()), current, clock(m));
    }

    /** Whether t can hold a reading: a {@code long} or one of the JDK's time types. */
    private static boolean timeTyped(TypeMirror t) {
        if (t.getKind() == TypeKind.LONG) {
            return true;
        }
        if (t.getKind() != TypeKind.DECLARED) {
            return false;
        }
        String n = ((TypeElement) ((DeclaredType) t).asElement()).getQualifiedName().toString();
        return n.equals("java.lang.Long") || n.equals("java.util.Date") || n.equals("java.sql.Timestamp")
                || n.equals("java.util.Calendar") || n.startsWith("java.time.");
    }

    /** What an abstract method is by its name and type alone (a clock behind an interface). */
    private Kind clock(ExecutableElement m) {
        if (!m.getModifiers().contains(Modifier.ABSTRACT) || !m.getParameters().isEmpty()) {
            return Kind.NONE;
        }
        String name = m.getSimpleName().toString();
        TypeMirror r = m.getReturnType();
        if (r.getKind() == TypeKind.LONG && CLOCK_MILLIS.contains(name)) {
            return Kind.WALL;
        }
        if (r.getKind() == TypeKind.DECLARED && CLOCK_INSTANT.contains(name)
                && ((TypeElement) ((DeclaredType) r).asElement()).getQualifiedName().contentEquals("java.time.Instant")) {
            return Kind.INSTANT;
        }
        return Kind.NONE;
    }

    // ---- pass 1: the elements of the trees, and the counters

    private final class Elements_ extends TreePathScanner<Void, Void> {
        @Override
        public Void scan(Tree tree, Void p) {
            if (tree instanceof IdentifierTree
                    || tree instanceof MemberSelectTree
                    || tree instanceof MethodInvocationTree
                    || tree instanceof NewClassTree
                    || tree instanceof VariableTree
                    || tree instanceof MethodTree) {
                Element el = trees.getElement(new TreePath(getCurrentPath(), tree));
                if (el != null) {
                    elements.put(tree, el);
                }
            }
            return super.scan(tree, p);
        }

        @Override
        public Void visitVariable(VariableTree vt, Void p) {
            super.visitVariable(vt, p);
            Element v = elements.get(vt);
            ExpressionTree init = vt.getInitializer() == null ? null : unparen(vt.getInitializer());
            if (v != null && v.getKind() == ElementKind.LOCAL_VARIABLE && init != null
                    && (init.getKind() == Tree.Kind.PLUS
                            || init instanceof MethodInvocationTree
                                    && ((MethodInvocationTree) init).getMethodSelect() instanceof MemberSelectTree
                                    && ((MemberSelectTree) ((MethodInvocationTree) init).getMethodSelect()).getIdentifier().toString().startsWith("plus"))) {
                deadlines.add(v);
            }
            return null;
        }

        @Override
        public Void visitAssignment(AssignmentTree at, Void p) {
            super.visitAssignment(at, p);
            Element t = target(at.getVariable());
            if (t != null) {
                reassigned.add(t);
            }
            return null;
        }

        @Override
        public Void visitUnary(UnaryTree ut, Void p) {
            super.visitUnary(ut, p); // first, so that the operand's element is known
            switch (ut.getKind()) {
                case PREFIX_INCREMENT:
                case POSTFIX_INCREMENT:
                case PREFIX_DECREMENT:
                case POSTFIX_DECREMENT:
                    // A variable incremented is a counter or a sequence number, even when seeded from the clock.
                    Element t = target(ut.getExpression());
                    if (t != null) {
                        program.counter(t);
                    }
                    break;
                default:
                    break;
            }
            return null;
        }
    }

    // ---- pass 2: flows and checks

    private final class Builder extends TreePathScanner<Void, Void> {
        private final String[] lines;
        // The enclosing methods; null stands for a lambda, whose returns are not its method's.
        private final List<Element> methods = new ArrayList<>();
        private int suppressed;

        Builder(String[] lines) {
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

        private Void declaration(Tree t, boolean extra, Supplier<Void> body) {
            boolean s = suppresses(t) || extra;
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
            return declaration(ct, false, () -> super.visitClass(ct, p));
        }

        @Override
        public Void visitMethod(MethodTree mt, Void p) {
            Element m = elements.get(mt);
            if (m instanceof ExecutableElement && !modelled) {
                overrides((ExecutableElement) m);
            }
            // A value type's own comparison methods compare the values their callers hand
            // them (java.util.Date.before compares two Dates): the caller is where a reading
            // would meet "now", and that call is checked there.
            boolean comparator = COMPARATORS.contains(mt.getName().toString());
            methods.add(m);
            try {
                return declaration(mt, comparator, () -> super.visitMethod(mt, p));
            } finally {
                methods.remove(methods.size() - 1);
            }
        }

        /** The methods m overrides or implements get what m returns. */
        private void overrides(ExecutableElement m) {
            if (m.getModifiers().contains(Modifier.STATIC)) {
                return;
            }
            Element owner = m.getEnclosingElement();
            if (!(owner instanceof TypeElement)) {
                return;
            }
            TypeElement type = (TypeElement) owner;
            Set<Element> seen = new HashSet<>();
            List<TypeMirror> todo = new ArrayList<>(types.directSupertypes(type.asType()));
            while (!todo.isEmpty()) {
                TypeMirror t = todo.remove(todo.size() - 1);
                Element se = types.asElement(t);
                if (!(se instanceof TypeElement) || !seen.add(se)) {
                    continue;
                }
                for (Element o : se.getEnclosedElements()) {
                    if (o.getKind() == ElementKind.METHOD && o.getSimpleName().equals(m.getSimpleName())
                            && elementUtils.overrides(m, (ExecutableElement) o, type)) {
                        program.override(m, o, o, timeTyped(m.getReturnType()));
                        // A call through the overridden method passes its arguments to m.
                        List<? extends VariableElement> mp = m.getParameters();
                        List<? extends VariableElement> op = ((ExecutableElement) o).getParameters();
                        for (int i = 0; i < mp.size() && i < op.size(); i++) {
                            program.override(op.get(i), mp.get(i), o, timeTyped(op.get(i).asType()));
                        }
                    }
                }
                todo.addAll(types.directSupertypes(t));
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
            return declaration(
                    vt,
                    false,
                    () -> {
                        Element v = elements.get(vt);
                        if (vt.getInitializer() != null && v != null && !dataField(v)) {
                            program.flow(writable(v), ir(vt.getInitializer()));
                        }
                        return super.visitVariable(vt, p);
                    });
        }

        @Override
        public Void visitAssignment(AssignmentTree at, Void p) {
            program.flow(writable(target(at.getVariable())), ir(at.getExpression()));
            return super.visitAssignment(at, p);
        }

        @Override
        public Void visitEnhancedForLoop(EnhancedForLoopTree ft, Void p) {
            program.flow(elements.get(ft.getVariable()), ir(ft.getExpression()));
            return super.visitEnhancedForLoop(ft, p);
        }

        @Override
        public Void visitReturn(ReturnTree rt, Void p) {
            Element m = methods.isEmpty() ? null : methods.get(methods.size() - 1);
            if (m != null && rt.getExpression() != null) {
                program.flow(writable(m), ir(rt.getExpression()));
            }
            return super.visitReturn(rt, p);
        }

        @Override
        public Void visitMethodInvocation(MethodInvocationTree mit, Void p) {
            Ir.Call c = call(mit);
            if (c != null) {
                ExecutableElement m = (ExecutableElement) c.method();
                ExpressionTree recv = receiver(mit);
                Element store = recv != null && STORES.contains(c.name()) ? writable(target(recv)) : null;
                List<Element> params = new ArrayList<>();
                for (VariableElement v : m.getParameters()) {
                    params.add(writable(v));
                }
                program.call(c, params, store);
                checkInvocation(mit, c);
            }
            return super.visitMethodInvocation(mit, p);
        }

        @Override
        public Void visitNewClass(NewClassTree nc, Void p) {
            // Arguments into the constructor's parameters (sun.security.util.Cache's entries).
            Element ctor = elements.get(nc);
            if (ctor instanceof ExecutableElement) {
                List<Element> params = new ArrayList<>();
                for (VariableElement v : ((ExecutableElement) ctor).getParameters()) {
                    params.add(writable(v));
                }
                program.call(new Ir.Call(ctor, owner(ctor), "<init>", null, irs(nc.getArguments()), true, Kind.NONE), params, null);
            }
            return super.visitNewClass(nc, p);
        }

        private void checkInvocation(MethodInvocationTree mit, Ir.Call c) {
            String owner = c.owner();
            String name = c.name();
            boolean between =
                    name.equals("between")
                            && (owner.equals("java.time.Duration")
                                    || owner.equals("java.time.temporal.ChronoUnit")
                                    || owner.equals("java.time.temporal.TemporalUnit"));
            if (between && c.args().size() >= 2) {
                check(mit, "between", "", c.args().get(0), c.args().get(1), false);
            }
            boolean compare = Set.of("isBefore", "isAfter", "compareTo", "before", "after", "until").contains(name);
            if (compare && c.recv() != null && !c.args().isEmpty()) {
                check(mit, "compare", "", c.recv(), c.args().get(0), false);
            }
        }

        @Override
        public Void visitBinary(BinaryTree b, Void p) {
            switch (b.getKind()) {
                case MINUS:
                case LESS_THAN:
                case LESS_THAN_EQUAL:
                case GREATER_THAN:
                case GREATER_THAN_EQUAL:
                    // A min, a max, a clamp, or two elements of an array ordered (a timer's heap):
                    // never a deadline.
                    check(b, "binary", b.getKind().name(), ir(b.getLeftOperand()), ir(b.getRightOperand()),
                            b.getKind() != Tree.Kind.MINUS
                                    && (keepsMinOrMax(b) || inArray(b.getLeftOperand()) && inArray(b.getRightOperand())));
                    break;
                default:
                    break;
            }
            return super.visitBinary(b, p);
        }

        private void check(Tree t, String what, String op, Ir.Expr a, Ir.Expr b, boolean ordering) {
            if (suppressed > 0) {
                return;
            }
            long pos = trees.getSourcePositions().getStartPosition(cu, t);
            int line = pos < 0 ? -1 : (int) cu.getLineMap().getLineNumber(pos);
            String directive = null;
            for (int l : new int[] {line, line - 1}) {
                if (l < 1 || l > lines.length) {
                    continue;
                }
                Matcher m = DIRECTIVE.matcher(lines[l - 1]);
                if (m.find()) {
                    if (!m.group(1).isBlank()) {
                        return; // silenced: nothing to solve
                    }
                    directive = " (the clockwatch:wallclock-ok on line " + l + " needs a reason to silence this)";
                }
            }
            program.check(new Program.Check(t, cu, cu.getSourceFile().getName(), pos, what, op, a, b, ordering,
                    render(t), directive));
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
            if (parent instanceof IfTree) {
                StatementTree then = ((IfTree) parent).getThenStatement();
                List<? extends StatementTree> stmts =
                        then instanceof BlockTree ? ((BlockTree) then).getStatements() : List.of(then);
                for (StatementTree st : stmts) {
                    if (st instanceof ExpressionStatementTree
                            && ((ExpressionStatementTree) st).getExpression() instanceof AssignmentTree) {
                        assigned.add(target(((AssignmentTree) ((ExpressionStatementTree) st).getExpression()).getVariable()));
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

        /** Whether e is an element of an array, or a field of one ({@code queue[j].nextExecutionTime}). */
        private boolean inArray(ExpressionTree e) {
            e = unparen(e);
            while (e instanceof MemberSelectTree) {
                e = unparen(((MemberSelectTree) e).getExpression());
            }
            return e instanceof ArrayAccessTree;
        }

        private Element operand(ExpressionTree e) {
            e = unparen(e);
            return e instanceof IdentifierTree || e instanceof MemberSelectTree ? target(e) : null;
        }
    }

    private static String render(Tree t) {
        String s = t.toString().replaceAll("\\s+", " ");
        return s.length() > 80 ? s.substring(0, 77) + "..." : s;
    }
}
