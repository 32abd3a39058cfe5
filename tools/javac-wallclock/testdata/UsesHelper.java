package wallclock.testdata;

/** Uses Helper, compiled before it: the reading comes across. */
class UsesHelper {
    private long last = Helper.nowMillis();

    boolean due(long intervalMillis) {
        return Helper.nowMillis() - last >= intervalMillis; // want "subtracts two wall-clock readings"
    }
}
