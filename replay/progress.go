package replay

// Progress is told how far a pass over a capture has read, for a progress
// line on a terminal: after each batch, how many of the capture's batches
// the pass has read; then that the pass is over, whether it read them all
// or stopped (a window's end, an error, events -n). An analysis may make
// several passes. Both are called on the goroutine of the pass, between
// batches: a batch a call, a few thousand for 100 M events.
type Progress interface {
	Read(batches, of int)
	Done()
}
