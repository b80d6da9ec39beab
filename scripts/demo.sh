#!/bin/sh
# demo.sh BPFTAPE OUTDIR: records the bundled virtio-net stand-in
# (testdata/demo/virtnet.c) with bpftape, then replays from the capture alone
# the analyses of the BCC virtio-net case study: RX entry vs return sizes, TX
# packets per flush, per-request TX totals, and the USDT example as BCC's
# trace prints it.
set -eu
bpftape=$1
out=$2
mkdir -p "$out"
vn=$(cd "$out" && pwd)/virtnet
cap=$out/demo.arrow

heading() { printf '\n%s\n%s\n' "$1" "$(echo "$1" | sed 's/./-/g')"; }

gcc -O2 -fno-omit-frame-pointer -fcf-protection=none -Wall -Werror -o "$vn" testdata/demo/virtnet.c
rm -f "$cap"
heading "Recording $vn 200000 with bpftape"
"$bpftape" record -o "$cap" -c "$vn 200000" \
	"rx=u:$vn:virtio_net_receive_rcu(arg2)" \
	"rx_ret=ur:$vn:virtio_net_receive_rcu" \
	"tx_ret=ur:$vn:virtio_net_flush_tx(retval:s32)" \
	"rx_end=U:$vn:qemu:virtio-net-rx-end" \
	"tx_len=U:$vn:qemu:virtio-net-tx-get-len" \
	"U:$vn:usdt-examples:usdt1" \
	"U:$vn:usdt-examples:usdt2(arg0,str(arg1),arg2)" >"$out/virtnet.truth"

heading "bpftape info $cap"
"$bpftape" info "$cap"

heading "Virtio-net RX (entry) log2 packet size histogram"
"$bpftape" hist "$cap" rx arg2 --label size
heading "Virtio-net RX (return) log2 packet size histogram"
"$bpftape" hist "$cap" rx_ret retval --label retSize
if "$bpftape" compare "$cap" rx arg2 rx_ret retval --identical >/dev/null; then
	echo "(entry and return histograms are identical, as in the article)"
fi
heading "virtio-net TX (return) log2 number of packets transmitted"
"$bpftape" hist "$cap" tx_ret retval --label "num packets"

heading "Virtio-net RX log2 received packets histogram (USDT virtio-net-rx-end)"
"$bpftape" hist "$cap" rx_end arg0 --label "recv pkts"
heading "Virtio-net TX per request: sent packets and total length (USDT virtio-net-tx-get-len summed per thread until virtio_net_flush_tx returns)"
"$bpftape" requests "$cap" tx_len arg0 tx_ret retval --end-label "sent pkts" --total-label len

heading "USDT example, as BCC's trace prints it"
"$bpftape" events "$cap" --time none \
	-f 'usdt1 "x=%d", arg0' \
	-f 'usdt2 "x=%d, arg2=%s, arg3=%d", arg0, arg1, arg2'

heading "The workload's own counts (packets per flush, bytes per flush), for comparison"
grep -E '^hist (tx_packets|tx_total)' "$out/virtnet.truth"
"$bpftape" report "$cap" -o "$out/report.html" --title "virtio-net stand-in" \
	--latency "rx rx_ret" --requests "tx_len arg0 tx_ret retval" --compare "rx arg2 rx_ret retval"
echo
echo "The capture is $cap, its bug-report page $out/report.html."
echo "Try (as root, like this demo: the capture is readable by its owner only):"
echo "  $bpftape hist $cap rx arg2 --style bpftrace --stats"
echo "  $bpftape latency $cap rx rx_ret -u"
echo "  $bpftape count $cap --by comm"
