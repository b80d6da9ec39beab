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
// Its loop takes four rows a turn, which spares three turns' bookkeeping
// (BenchmarkPickRows: 1.14-1.29 ns a row one row a turn, 0.94-1.01 four;
// eight, in a loop the compiler does not unroll, 1.40-1.43).
//
//go:noinline
func PickRows(rows *[PickMax]int32, probes []uint16, base int, a, b uint16) int {
	k := 0
	i := 0
	for ; i+4 <= len(probes); i += 4 {
		p := (*[4]uint16)(probes[i:])
		r := int32(base + i)
		rows[k&(PickMax-1)] = r
		k += b2i(p[0] == a) | b2i(p[0] == b)
		rows[k&(PickMax-1)] = r + 1
		k += b2i(p[1] == a) | b2i(p[1] == b)
		rows[k&(PickMax-1)] = r + 2
		k += b2i(p[2] == a) | b2i(p[2] == b)
		rows[k&(PickMax-1)] = r + 3
		k += b2i(p[3] == a) | b2i(p[3] == b)
	}
	for ; i < len(probes); i++ {
		rows[k&(PickMax-1)] = int32(base + i)
		k += b2i(probes[i] == a) | b2i(probes[i] == b)
	}
	return k
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
