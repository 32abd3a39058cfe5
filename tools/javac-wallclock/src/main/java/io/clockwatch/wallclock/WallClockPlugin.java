package io.clockwatch.wallclock;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.Plugin;
import com.sun.source.util.TaskEvent;
import com.sun.source.util.TaskListener;
import com.sun.source.util.Trees;
import javax.lang.model.element.TypeElement;
import javax.tools.Diagnostic;

/**
 * The javac plugin {@code WallClock}: reports intervals, timeouts, deadlines, renewal checks and
 * expiries computed from wall-clock readings ({@code System.currentTimeMillis()}, {@code
 * Instant.now()}, {@code new Date().getTime()}, {@code Clock.systemUTC().millis()}, ...).
 *
 * <p>Run it with {@code javac -cp clockwatch-wallclock.jar -Xplugin:WallClock ...}; findings are
 * warnings, or errors with {@code -Xplugin:"WallClock error"} so that a build fails on them; the
 * lower-severity category (two stored readings ordered) stays a warning and {@code noambiguous}
 * turns it off. The classes are analysed together once javac has attributed all of them, so the
 * findings do not depend on the order of the files.
 * docs/audit.md says what is reported, what is not, and how a reviewed line is silenced.
 */
public final class WallClockPlugin implements Plugin {
    /** The name javac knows the plugin by, as in {@code -Xplugin:WallClock}. */
    public static final String NAME = "WallClock";

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public void init(JavacTask task, String... args) {
        Diagnostic.Kind level = Diagnostic.Kind.WARNING;
        boolean ambiguous = true;
        String bad = null;
        for (String a : args) {
            switch (a) {
                case "error":
                    level = Diagnostic.Kind.ERROR;
                    break;
                case "warn":
                    level = Diagnostic.Kind.WARNING;
                    break;
                case "noambiguous":
                    ambiguous = false;
                    break;
                default:
                    bad = "-Xplugin:" + NAME + ": unknown argument \"" + a + "\" (want error, warn or noambiguous)";
            }
        }
        Trees trees = Trees.instance(task);
        if (bad != null) {
            // A plugin cannot report before the first file is parsed, and an exception from init
            // crashes javac with a stack trace: say it once, as an error, on the first file.
            String msg = bad;
            task.addTaskListener(
                    new TaskListener() {
                        private boolean said;

                        @Override
                        public void finished(TaskEvent e) {
                            if (!said && e.getKind() == TaskEvent.Kind.PARSE && e.getCompilationUnit() != null) {
                                said = true;
                                trees.printMessage(Diagnostic.Kind.ERROR, msg, e.getCompilationUnit(), e.getCompilationUnit());
                            }
                        }
                    });
            return;
        }
        Program program = new Program();
        Diagnostic.Kind kind = level;
        boolean amb = ambiguous;
        task.addTaskListener(
                new TaskListener() {
                    @Override
                    public void finished(TaskEvent e) {
                        // The whole compilation is in: solve it and report, in file order.
                        if (e.getKind() == TaskEvent.Kind.COMPILATION) {
                            program.solve(trees, kind, amb);
                            return;
                        }
                        // ANALYZE finishes once per top-level class, after attribution and
                        // flow analysis and before lowering rewrites the tree.
                        if (e.getKind() != TaskEvent.Kind.ANALYZE) {
                            return;
                        }
                        CompilationUnitTree cu = e.getCompilationUnit();
                        TypeElement te = e.getTypeElement();
                        if (cu == null || te == null) {
                            return;
                        }
                        ClassTree ct = trees.getTree(te);
                        if (ct == null) {
                            return;
                        }
                        new Analyzer(trees, task.getElements(), task.getTypes(), cu, ct, program).run();
                    }
                });
    }
}
