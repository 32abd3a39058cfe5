package wallclock.testdata;

/**
 * A cache whose entries get their expiry through a constructor (sun.security.util.Cache's
 * HardCacheEntry): the reading crosses into the constructor's parameter.
 */
class Entries {
    interface Entry {
        boolean isValid(long currentTime);
    }

    static final class HardEntry implements Entry {
        private final long expirationTime;

        HardEntry(long expirationTime) {
            this.expirationTime = expirationTime;
        }

        @Override
        public boolean isValid(long currentTime) {
            return currentTime <= expirationTime; // want "compares wall-clock readings"
        }
    }

    Entry put(long lifetime) {
        return new HardEntry(System.currentTimeMillis() + lifetime);
    }

    boolean get(Entry e) {
        return e.isValid(System.currentTimeMillis());
    }
}
