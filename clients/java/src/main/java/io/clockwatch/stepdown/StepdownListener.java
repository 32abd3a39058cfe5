package io.clockwatch.stepdown;

/**
 * What an application does when clockwatch's verdict on the clock changes.
 *
 * <p>{@link StepdownClient} calls it from its reader thread, in order. It acks a stepdown only after
 * {@link #onStepdown} has returned: return once nothing acts on the lock or lease any more. {@link
 * ClockGuard} implements it with {@code java.util.concurrent} locks.
 */
public interface StepdownListener {
    /**
     * The clock cannot be trusted (a stepdown, or {@code unknown}: clockwatch cannot be heard). Release
     * the lock, then return. Called for every stepdown event, also while already stepped down.
     */
    void onStepdown(Event event) throws InterruptedException;

    /** The clock may be trusted again ({@code hello} in state ok, or a {@code resume}). */
    default void onTrusted(Event event) {}

    /**
     * A watched peer's clock (see {@link StepdownClient#watchPeers}): another node's, at once and whenever
     * its state, reason or clock epoch changes (a changed epoch: its clock stepped). It says nothing of
     * this node's clock; nothing is acked.
     */
    default void onPeer(Event event) {}
}
