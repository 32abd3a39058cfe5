package trace

// Only tests write whole Lines; record writes samples and marks.

// Write writes a Line of either kind.
func (w *Writer) Write(l Line) error {
	if l.ClockSet {
		return w.ClockSet(l.Sample.Mono)
	}
	return w.Sample(l.Sample)
}
