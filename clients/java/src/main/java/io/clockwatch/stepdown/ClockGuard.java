package io.clockwatch.stepdown;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * A {@link StepdownListener} that gates the work relying on a lock or lease with {@code
 * java.util.concurrent} locks.
 *
 * <p>Work that acts on the application's lock runs holding {@link #workLock()}: a {@link Lock} whose
 * {@code tryLock()} fails and whose {@code lock()} waits while clockwatch does not trust the clock. On a
 * stepdown the guard turns untrusted, calls the release callback with the reason, then waits until every
 * holder of the work lock has unlocked (a write lock over their read locks) before {@link StepdownClient}
 * acks: clockwatch's ack then means "nothing acts on the lock any more".
 */
public final class ClockGuard implements StepdownListener {
    private final ReentrantReadWriteLock work = new ReentrantReadWriteLock();
    private final ReentrantLock stateLock = new ReentrantLock();
    private final Condition trustedAgain = stateLock.newCondition();
    private final Consumer<String> onRelease;
    private volatile boolean trusted;

    /** A guard that calls onRelease(reason) on every change from trusted to untrusted. */
    public ClockGuard(Consumer<String> onRelease) {
        this.onRelease = onRelease;
    }

    /** Whether clockwatch says the clock may be trusted now. */
    public boolean trusted() {
        return trusted;
    }

    /** Waits until the clock is trusted; false if the timeout passed first. */
    public boolean awaitTrusted(long timeout, TimeUnit unit) throws InterruptedException {
        long nanos = unit.toNanos(timeout);
        stateLock.lock();
        try {
            while (!trusted) {
                if (nanos <= 0) {
                    return false;
                }
                nanos = trustedAgain.awaitNanos(nanos);
            }
            return true;
        } finally {
            stateLock.unlock();
        }
    }

    /** The lock work relying on the application's lock holds; see the class comment. */
    public Lock workLock() {
        return workLock;
    }

    @Override
    public void onStepdown(Event event) {
        boolean was;
        stateLock.lock();
        try {
            was = trusted;
            trusted = false;
        } finally {
            stateLock.unlock();
        }
        if (was && onRelease != null) {
            onRelease.accept(event.reason() == null ? event.type() : event.reason());
        }
        // Every work section that started before the stepdown has ended
        // once the write lock is ours; new ones see trusted false.
        work.writeLock().lock();
        work.writeLock().unlock();
    }

    @Override
    public void onTrusted(Event event) {
        stateLock.lock();
        try {
            trusted = true;
            trustedAgain.signalAll();
        } finally {
            stateLock.unlock();
        }
    }

    private final Lock workLock = new Lock() {
        private final Lock read = work.readLock();

        @Override
        public void lock() {
            while (true) {
                try {
                    lockInterruptibly();
                    return;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void lockInterruptibly() throws InterruptedException {
            while (true) {
                awaitTrusted(Long.MAX_VALUE, TimeUnit.NANOSECONDS);
                read.lockInterruptibly();
                if (trusted) {
                    return;
                }
                read.unlock();
            }
        }

        @Override
        public boolean tryLock() {
            if (!trusted || !read.tryLock()) {
                return false;
            }
            if (trusted) {
                return true;
            }
            read.unlock();
            return false;
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
            long deadline = System.nanoTime() + unit.toNanos(time);
            while (true) {
                long left = deadline - System.nanoTime();
                if (!awaitTrusted(left, TimeUnit.NANOSECONDS) || !read.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    return false;
                }
                if (trusted) {
                    return true;
                }
                read.unlock();
            }
        }

        @Override
        public void unlock() {
            read.unlock();
        }

        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("the work lock has no conditions");
        }
    };
}
