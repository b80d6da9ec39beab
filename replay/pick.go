package replay

// PickMax is the most rows PickRows picks at a time.
const PickMax = 1024

// PickRows writes to rows the indices base+i of the rows whose probes[i] is
// a or b (a twice for one probe), in order, and returns how many it wrote;
// probes holds at most PickMax rows. It does so without a branch on which
// probe a row is from, which in a capture of many threads is as good as
// random: a branch there was mispredicted at every other row, and the
// analyses that take a stretch of rows at a time pick their probes' rows
// first, then work on those. It is not inlined: in a caller's loop that
// calls other functions, its count went to the stack and back every row.
//
//go:noinline
func PickRows(rows *[PickMax]int32, probes []uint16, base int, a, b uint16) int {
	k := 0
	for i, p := range probes {
		rows[k&(PickMax-1)] = int32(base + i)
		k += b2i(p == a) | b2i(p == b)
	}
	return k
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
