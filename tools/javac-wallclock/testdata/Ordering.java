package wallclock.testdata;

/**
 * False alarms found in the JDK's sources (docs/audit.md), kept as cases: a timer's heap ordered
 * by stored execution times (java.util.Timer's TaskQueue), and a value type's own comparison
 * (java.util.Date.before).
 */
class Ordering {
    static final class Task {
        long nextExecutionTime;
    }

    private final Task[] queue = new Task[16];

    void schedule(Task t, long delayMillis) {
        t.nextExecutionTime = System.currentTimeMillis() + delayMillis;
        queue[1] = t;
    }

    void fixUp(int k) {
        while (k > 1) {
            int j = k >> 1;
            if (queue[j].nextExecutionTime <= queue[k].nextExecutionTime) {
                break;
            }
            Task tmp = queue[j];
            queue[j] = queue[k];
            queue[k] = tmp;
            k = j;
        }
    }

    boolean due() {
        long currentTime = System.currentTimeMillis();
        return queue[1].nextExecutionTime <= currentTime; // want "compares wall-clock readings"
    }

    static final class Stamp {
        private final long millis = System.currentTimeMillis();

        boolean before(Stamp when) {
            return millis < when.millis;
        }
    }
}

/**
 * java.net.http's ConnectionPool.ExpiryList: the new entry's deadline ordered against the stored
 * ones to keep the list sorted (neither is "now"); the purge compares a stored deadline with now.
 */
class ExpiryList {
    static final class Entry {
        final java.time.Instant expiry;

        Entry(java.time.Instant expiry) {
            this.expiry = expiry;
        }
    }

    private final java.util.List<Entry> list = new java.util.ArrayList<>();

    void add(java.time.Instant now, long keepAlive) {
        java.time.Instant then = now.plusSeconds(keepAlive);
        int i = 0;
        for (Entry entry : list) {
            if (then.isAfter(entry.expiry)) {
                break;
            }
            i++;
        }
        list.add(i, new Entry(then));
    }

    void addNow(long keepAlive) {
        add(java.time.Instant.now(), keepAlive);
    }

    boolean purge(java.time.Instant now) {
        return list.get(0).expiry.isBefore(now); // want "measures between two wall-clock instants"
    }

    boolean purgeNow() {
        return purge(java.time.Instant.now());
    }
}
