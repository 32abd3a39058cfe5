package wallclock.testdata;

/** A clock helper of the kind many code bases have: its readings reach other classes. */
final class Helper {
    private Helper() {}

    static long nowMillis() {
        return System.currentTimeMillis();
    }
}
