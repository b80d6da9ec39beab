package record

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Following processes (-c, -p PID --follow): the programs record only the
// processes in the traced map; bpf's track_fork adds each process a traced
// one starts, and pruneExited takes out those that exited, so that the map
// holds the live ones (and a pid the kernel hands out again is not taken
// for a traced process).

// startFollowing attaches the fork tracker, then puts the target and, for
// a running process (-p), the processes it has already started into the
// traced map: a process started meanwhile is added by the tracker.
func (r *recorder) startFollowing() error {
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_fork", Program: r.objs.TrackFork})
	if err != nil {
		return fmt.Errorf("attach the child process tracker (raw tracepoint sched_process_fork): %w", err)
	}
	r.forks = l
	tgids := []int{r.target}
	if r.opts.PID != 0 {
		tgids = append(tgids, descendants(r.target)...)
	}
	for _, tgid := range tgids {
		if err := r.objs.Trace(uint32(tgid)); err != nil {
			return err
		}
	}
	r.followed = uint64(len(tgids))
	return nil
}

// pruneExited removes exited processes from the traced map every 100 ms
// until stop is closed; then it adds up the processes followed, and
// closes done.
func (r *recorder) pruneExited(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		tgids, err := r.objs.TracedProcesses()
		if err != nil {
			r.warn(err.Error())
		}
		for _, tgid := range tgids {
			if unix.Kill(int(tgid), 0) == unix.ESRCH {
				if err := r.objs.Untrace(tgid); err != nil {
					r.warn(err.Error())
				}
			}
		}
		select {
		case <-stop:
			if tracked, untracked, err := r.objs.Children(); err == nil {
				r.followed += tracked
				r.untracked = untracked
			}
			return
		case <-tick.C:
		}
	}
}

// descendants lists the processes that pid started, and theirs, as /proc
// shows them now.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentPID(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentPID reads the parent of process pid from /proc/PID/stat, whose
// fourth field follows the command name in parentheses (which may itself
// hold spaces and parentheses).
func parentPID(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(string(f[1]))
	return pp, err == nil
}
