package io.clockwatch.wallclock;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * The plugin's tests in the manner of Go's analysistest: every source file under testdata/ is
 * compiled with the plugin, and each line that ends in {@code // want "regexp"} must get exactly
 * one WallClock diagnostic that matches; every other line must get none.
 *
 * <p>Usage: {@code java -cp JAR:TESTCLASSES io.clockwatch.wallclock.WallClockTest JAR TESTDATA}.
 */
public final class WallClockTest {
    private static final Pattern WANT = Pattern.compile("//\\s*want \"(.*)\"\\s*$");
    private static final String PREFIX = "[" + WallClockPlugin.NAME;

    private final Path jar;
    private final Path testdata;
    private int passed;
    private int failed;

    private WallClockTest(Path jar, Path testdata) {
        this.jar = jar;
        this.testdata = testdata;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: WallClockTest PLUGIN.jar TESTDATA-DIR");
            System.exit(2);
        }
        WallClockTest t = new WallClockTest(Path.of(args[0]), Path.of(args[1]));
        t.run("findings", t::findings);
        t.run("errorMode", t::errorMode);
        t.run("badArgument", t::badArgument);
        t.run("fileOrder", t::fileOrder);
        t.run("noAmbiguous", t::noAmbiguous);
        System.out.printf("%d passed, %d failed%n", t.passed, t.failed);
        System.exit(t.failed == 0 ? 0 : 1);
    }

    private interface Test {
        void run(Consumer<String> fail) throws Exception;
    }

    private void run(String name, Test test) {
        List<String> errors = new ArrayList<>();
        try {
            test.run(errors::add);
        } catch (Exception e) {
            errors.add("threw " + e);
        }
        if (errors.isEmpty()) {
            passed++;
            System.out.println("ok   " + name);
        } else {
            failed++;
            System.out.println("FAIL " + name);
            errors.forEach(e -> System.out.println("     " + e));
        }
    }

    private List<Path> sources() throws IOException {
        try (Stream<Path> s = Files.walk(testdata)) {
            return s.filter(p -> p.toString().endsWith(".java")).sorted().collect(Collectors.toList());
        }
    }

    private static final class Result {
        boolean ok;
        final List<Diagnostic<? extends JavaFileObject>> diagnostics = new ArrayList<>();
    }

    private Result compile(List<Path> files, String plugin) throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> dc = new DiagnosticCollector<>();
        Path out = Files.createTempDirectory("wallclock-test");
        Result r = new Result();
        try (StandardJavaFileManager fm = javac.getStandardFileManager(dc, Locale.ROOT, null)) {
            List<String> opts =
                    List.of("--release", "17", "-classpath", jar.toString(), "-d", out.toString(), plugin);
            r.ok = javac.getTask(null, fm, dc, opts, null, fm.getJavaFileObjectsFromPaths(files)).call();
        }
        r.diagnostics.addAll(dc.getDiagnostics());
        return r;
    }

    /** Every want is met, nothing else is reported, and the code compiles. */
    private void findings(Consumer<String> fail) throws Exception {
        List<Path> files = sources();
        if (files.size() < 5) {
            fail.accept("only " + files.size() + " test sources under " + testdata);
        }
        Map<String, String> want = new TreeMap<>(); // "File.java:line" -> regexp
        for (Path f : files) {
            List<String> lines = Files.readAllLines(f);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = WANT.matcher(lines.get(i));
                if (m.find()) {
                    want.put(f.getFileName() + ":" + (i + 1), m.group(1));
                }
            }
        }
        Result r = compile(files, "-Xplugin:" + WallClockPlugin.NAME);
        if (!r.ok) {
            fail.accept("javac failed");
        }
        int found = 0;
        for (Diagnostic<? extends JavaFileObject> d : r.diagnostics) {
            String msg = d.getMessage(Locale.ROOT);
            if (d.getKind() == Diagnostic.Kind.ERROR) {
                fail.accept("compile error: " + d);
                continue;
            }
            if (!msg.startsWith(PREFIX)) {
                continue;
            }
            found++;
            if (d.getKind() != Diagnostic.Kind.WARNING) {
                fail.accept("diagnostic kind " + d.getKind() + ", want WARNING: " + msg);
            }
            String at = Path.of(d.getSource().getName()).getFileName() + ":" + d.getLineNumber();
            String re = want.remove(at);
            if (re == null) {
                fail.accept(at + ": unexpected diagnostic: " + msg);
            } else if (!Pattern.compile(re).matcher(msg).find()) {
                fail.accept(at + ": diagnostic " + msg + " does not match " + re);
            }
        }
        want.forEach((at, re) -> fail.accept(at + ": no diagnostic matching " + re));
        if (found == 0) {
            fail.accept("the plugin reported nothing: was it loaded?");
        }
    }

    /** The findings of one compilation, as "File.java:line: message", sorted. */
    private List<String> findingsOf(List<Path> files, String plugin) throws IOException {
        Result r = compile(files, plugin);
        List<String> out = new ArrayList<>();
        for (Diagnostic<? extends JavaFileObject> d : r.diagnostics) {
            String msg = d.getMessage(Locale.ROOT);
            if (msg.startsWith(PREFIX)) {
                out.add(Path.of(d.getSource().getName()).getFileName() + ":" + d.getLineNumber() + ": " + msg);
            }
        }
        out.sort(null);
        return out;
    }

    /**
     * The findings do not depend on the order of the files on javac's command line: the sorted
     * order, the reverse and shuffles (a fixed seed, so that a failure can be replayed) all give
     * the same findings.
     */
    private void fileOrder(Consumer<String> fail) throws Exception {
        List<Path> files = sources();
        String plugin = "-Xplugin:" + WallClockPlugin.NAME;
        List<String> want = findingsOf(files, plugin);
        List<List<Path>> orders = new ArrayList<>();
        List<Path> reversed = new ArrayList<>(files);
        java.util.Collections.reverse(reversed);
        orders.add(reversed);
        java.util.Random rnd = new java.util.Random(37);
        for (int i = 0; i < 3; i++) {
            List<Path> shuffled = new ArrayList<>(files);
            java.util.Collections.shuffle(shuffled, rnd);
            orders.add(shuffled);
        }
        for (List<Path> order : orders) {
            List<String> got = findingsOf(order, plugin);
            if (!got.equals(want)) {
                List<String> missing = new ArrayList<>(want);
                missing.removeAll(got);
                List<String> extra = new ArrayList<>(got);
                extra.removeAll(want);
                fail.accept("order " + order.stream().map(p -> p.getFileName().toString()).collect(Collectors.joining(","))
                        + ": missing " + missing + ", extra " + extra);
            }
        }
        if (want.size() < 20) {
            fail.accept("only " + want.size() + " findings in the sorted order: " + want);
        }
    }

    /** noambiguous turns the lower-severity category off, and only it. */
    private void noAmbiguous(Consumer<String> fail) throws Exception {
        List<Path> files = List.of(testdata.resolve("Lease.java"), testdata.resolve("Incident.java"));
        List<String> on = findingsOf(files, "-Xplugin:" + WallClockPlugin.NAME);
        List<String> off = findingsOf(files, "-Xplugin:" + WallClockPlugin.NAME + " noambiguous");
        long ambiguous = on.stream().filter(f -> f.contains("[WallClock ambiguous]")).count();
        if (ambiguous != 1 || off.size() != on.size() - 1 || off.stream().anyMatch(f -> f.contains("ambiguous]"))) {
            fail.accept("with the category: " + on + "; without: " + off);
        }
    }

    /** With the error argument, findings are errors and the compilation fails. */
    private void errorMode(Consumer<String> fail) throws Exception {
        Result r = compile(List.of(testdata.resolve("Incident.java")), "-Xplugin:" + WallClockPlugin.NAME + " error");
        long errors =
                r.diagnostics.stream()
                        .filter(d -> d.getKind() == Diagnostic.Kind.ERROR && d.getMessage(Locale.ROOT).startsWith(PREFIX))
                        .count();
        if (r.ok) {
            fail.accept("javac succeeded, want it to fail on the findings");
        }
        if (errors != 2) {
            fail.accept("got " + errors + " WallClock errors in Incident.java, want 2: " + r.diagnostics);
        }
    }

    /** An unknown plugin argument is an error that names it. */
    private void badArgument(Consumer<String> fail) throws Exception {
        Result r = compile(List.of(testdata.resolve("Helper.java")), "-Xplugin:" + WallClockPlugin.NAME + " strict");
        boolean named = r.diagnostics.stream().anyMatch(d -> d.getMessage(Locale.ROOT).contains("unknown argument \"strict\""));
        if (r.ok || !named) {
            fail.accept("ok=" + r.ok + " diagnostics=" + r.diagnostics + ", want a failure naming \"strict\"");
        }
    }
}
