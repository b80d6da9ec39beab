// Package hist accumulates event values into histograms and prints them
// byte for byte the way BCC and bpftrace print theirs.
//
// [Log2] mirrors a BCC BPF_HISTOGRAM filled with bpf_log2l() and prints like
// bcc's Python print_log2_hist and print_json_hist. [Pow2] and [Linear]
// mirror bpftrace's hist() and lhist() and print like bpftrace; [Linear]
// also prints like bcc's print_linear_hist. [Stats] keeps count, sum, min,
// max and approximate percentiles in memory that does not grow with the
// number of values.
//
// All Add methods are allocation-free (see [Stats.Add] for its one bounded
// exception) so they can be called once per replayed event.
package hist
