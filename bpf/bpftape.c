//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * bpftape kernel side: one generic uprobe program (used for uprobes,
 * uretprobes and USDT probes) and one generic tracepoint program. Each
 * attachment carries a BPF cookie that indexes the `probe_specs` array (or,
 * on kernels without cookies, has a copy of the program with its spec as the
 * constant fixed_spec_data); the spec says which values to record. Every event becomes one fixed-layout
 * `struct sample` in the ring buffer of the CPU it ran on (`rings`; see
 * sample.go for the
 * userspace view of the layout). The task's comm is not in every sample: a
 * `struct comm_record` goes ahead of a sample only when the CPU's last
 * recorded thread or its comm changed (see emit_comm).
 *
 * Only the handful of kernel ABI definitions needed are written out below
 * (for x86-64 and arm64), so the build needs nothing but clang and libbpf's
 * bpf_helpers.h: no vmlinux.h, no kernel headers.
 */

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

/* From include/uapi/linux/bpf.h. */
enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
	BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};
enum {
	BPF_RB_AVAIL_DATA = 0,
};
enum {
	BPF_NOEXIST = 1,
};
enum {
	BPF_F_MMAPABLE = 1 << 10,
};
enum {
	BPF_F_USER_STACK = 1 << 8,
};

/* Context of a raw tracepoint program: the tracepoint's arguments. */
struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

/*
 * struct pt_regs of the target architecture, as far as the programs read it.
 * For uprobes the program context is the user-mode register set. Arg specs
 * name registers by their byte offset in this struct (bpf.Arch in arch.go).
 * REG_RET holds an integer return value, REG_SP the stack pointer, and
 * REG_LR, where the architecture has one, the return address at a
 * function's first instruction.
 */
#if defined(__TARGET_ARCH_x86)
/* arch/x86/include/asm/ptrace.h */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
#define REG_RET __builtin_offsetof(struct pt_regs, ax)
#define REG_SP __builtin_offsetof(struct pt_regs, sp)
#elif defined(__TARGET_ARCH_arm64)
/*
 * arch/arm64/include/asm/ptrace.h: struct pt_regs starts with struct
 * user_pt_regs (x0-x30, sp, pc, pstate); the programs read nothing after it.
 */
struct pt_regs {
	unsigned long regs[31];
	unsigned long sp, pc, pstate;
};
#define REG_RET __builtin_offsetof(struct pt_regs, regs[0])
#define REG_SP __builtin_offsetof(struct pt_regs, sp)
#define REG_LR __builtin_offsetof(struct pt_regs, regs[30])
#else
#error "bpftape.c: define __TARGET_ARCH_x86 or __TARGET_ARCH_arm64 (bpf2go -target does)"
#endif

#include <bpf/bpf_helpers.h>

#define MAX_ARGS 12
#define MAX_STRS 4
#define STR_LEN 64
#define MAX_SPECS 4096
#define MAX_PROBES 4096
#define MAX_TRACED 65536
/*
 * Programs that may run inside one another on a CPU: a fentry program in an
 * interrupt that came during a uprobe program, for one. Each level of
 * nesting has its own scratch buffers (sample_scratch, stack_scratch,
 * expr_out), indexed by the depth cpu_state.nest counts.
 */
#define SCRATCH_DEPTH 4

/* How one recorded value is obtained. Mirrored by Kind* in spec.go. */
enum arg_kind {
	ARG_NONE = 0,		/* value 0 */
	ARG_CONST = 1,		/* value = off */
	ARG_REG = 2,		/* register `reg` */
	ARG_REG_DEREF = 3,	/* `size` bytes of user memory at reg + off */
	ARG_SIB = 4,		/* `size` bytes at reg + index_reg * scale + off */
	ARG_RETVAL = 5,		/* return value (REG_RET), for uretprobes */
	ARG_TP_FIELD = 6,	/* `size` bytes at ctx + off of a tracepoint record */
	ARG_TP_CHARARRAY = 7,	/* char[size] at ctx + off, as a string */
	ARG_TP_DATALOC_STR = 8, /* __data_loc char[] whose u32 locator is at ctx + off */
	ARG_USER_STR = 9,	/* user C string at reg + off */
	ARG_REG_DEREF_STR = 10, /* user C string whose pointer is at user memory reg + off */
	ARG_TP_USER_STR = 11,	/* user C string whose pointer is the u64 at ctx + off */
	ARG_ADDR_STR = 12,	/* C string at reg + off, user or kernel memory by its address (kprobes) */
	ARG_FUNC_ARG = 13,	/* argument number `reg` of a fentry/fexit program's function */
	ARG_FUNC_RET = 14,	/* return value of a fexit program's function */
	ARG_FUNC_STR = 15,	/* C string whose pointer is argument `reg`, user or kernel memory by address */
};

/* Which context a program gets: how record() reads its args. */
enum ctx_kind {
	CTX_REGS = 0,  /* struct pt_regs: uprobes, uretprobes, USDT, kprobes, kretprobes */
	CTX_TP = 1,    /* a tracepoint's record */
	CTX_FUNC = 2,  /* a fentry/fexit program's u64 args (read through bpf_get_func_arg) */
};

/* Reserved record size; mirrored by Class* in spec.go. */
enum size_class {
	CLASS_ARGS0 = 0,
	CLASS_ARGS1 = 1,
	CLASS_ARGS2 = 2,
	CLASS_ARGS6 = 3,
	CLASS_ARGS12 = 4,
	CLASS_ARGS12_STR4 = 5,
};

/* probe_id of a struct comm_record; mirrored by CommProbeID in sample.go. */
#define COMM_PROBE_ID 0xffff
/* probe_id of a batch of staged records; mirrored by BatchProbeID in sample.go. */
#define BATCH_PROBE_ID 0xfffd

/*
 * Address flags (arg_spec.flags) of the memory kinds ARG_REG_DEREF, ARG_SIB
 * and ARG_REG_DEREF_STR. Mirrored by Addr* in spec.go.
 */
enum addr_flag {
	ADDR_NO_BASE = 1, /* no base register: the address starts at 0 (absolute, %fs:off, off(,%idx,s)) */
	ADDR_FS = 2,	  /* add the thread's %fs base (x86-64 TLS): %fs:... operands */
	ADDR_GS = 4,	  /* add the thread's %gs base */
};

enum sample_flag {
	SAMPLE_STR_TRUNCATED = 1, /* a string did not fit its slot */
	SAMPLE_READ_FAULT = 2,	  /* a register or memory read failed; its value is 0 */
};

#define MAX_READS 4 /* pointer loads of one expression (arg_spec.read_off) */

/*
 * What an expression does with the value its kind gives (arg_spec.leaf):
 * the value is a pointer, the arg_spec.nread loads v = *(u64 *)(v + off)
 * follow it, and then the leaf is read or taken as an address.
 */
enum leaf_kind {
	LEAF_NONE = 0, /* no expression: the kind's value is recorded */
	LEAF_READ = 1, /* read leaf_size bytes at v + leaf_off */
	LEAF_ADDR = 2, /* the value is v + leaf_off (an array member, &x) */
};

enum leaf_flag {
	LEAF_SIGNED = 1, /* sign-extend a LEAF_READ value */
	LEAF_STR = 2,	 /* the value is the address of a C string to copy into str_slot */
	/*
	 * Read user memory only (uprobes): the traced program sets the
	 * pointers, and must not make the recorder copy kernel memory.
	 */
	LEAF_USER = 4,
};

struct arg_spec {
	__u8 kind;	/* enum arg_kind */
	__u8 reg;	/* byte offset of the base register in struct pt_regs */
	__u8 index_reg; /* byte offset of the index register (ARG_SIB) */
	__u8 scale;	/* index multiplier (ARG_SIB) */
	__u8 size;	/* 1, 2, 4 or 8: integer width; max bytes for ARG_TP_CHARARRAY */
	__u8 is_signed;
	__u8 str_slot; /* 0..MAX_STRS-1, string kinds only */
	__u8 flags;    /* enum addr_flag, memory kinds only */
	__s64 off;
	/* An expression (arg0->len, t->task, str(f->name)) over an integer kind's value. */
	__u8 leaf;	/* enum leaf_kind */
	__u8 nread;	/* pointer loads before the leaf, 0..MAX_READS */
	__u8 leaf_size; /* 1, 2, 4 or 8 (LEAF_READ) */
	__u8 leaf_flags; /* enum leaf_flag */
	__s32 leaf_off;
	__s32 read_off[MAX_READS];
};

#define MAX_PRED 16 /* operations of a probe's filter */

/* Filter operations (pred_op.op), in postfix order. Mirrored by Pred* in spec.go. */
enum pred_kind {
	PRED_EQ = 0, /* push operand == val */
	PRED_NE = 1,
	PRED_LT = 2,
	PRED_LE = 3,
	PRED_GT = 4,
	PRED_GE = 5,
	PRED_AND = 6, /* pop two, push their conjunction */
	PRED_OR = 7,
	PRED_NOT = 8, /* negate the top */
};

/* What a comparison compares (pred_op.operand). */
enum pred_operand {
	OPND_FIELD = 0, /* the recorded value of arg `field` */
	OPND_PID = 1,
	OPND_TID = 2,
	OPND_CPU = 3,
	OPND_COMM = 4, /* the first `len` bytes of the comm (the constant's NUL included) */
};

struct pred_op {
	__u8 op;	/* enum pred_kind */
	__u8 operand;	/* enum pred_operand */
	__u8 field;	/* arg index (OPND_FIELD) */
	__u8 is_signed; /* signed comparison */
	__u8 len;	/* OPND_COMM: bytes compared, 1..16 */
	__u8 _pad[3];
	__u64 val;  /* the constant; OPND_COMM: bytes 0..7 */
	__u64 val2; /* OPND_COMM: bytes 8..15 */
};

struct probe_spec {
	__u16 probe_id;
	__u8 nargs;
	__u8 size_class; /* enum size_class */
	__u8 nstr;
	__u8 ustack;	  /* user stack frames to record ahead of the sample, 0 = none */
	__u8 kstack;	  /* kernel stack frames, 0 = none */
	__u8 flags;	  /* enum spec_flag */
	/*
	 * A filter: npred operations in postfix order over the recorded
	 * values, pid, tid, cpu and comm. An event it rejects is counted in
	 * `filtered` and sends nothing. 0: record every event.
	 */
	__u8 npred;
	__u8 _pad1;
	/*
	 * SPEC_SELF_SWITCH: the byte offset in the tracepoint's record of the
	 * s32 tid of the thread switched in (sched_switch's next_pid).
	 */
	__u16 next_tid_off;
	__u8 _pad[4];
	struct arg_spec args[MAX_ARGS];
	struct pred_op pred[MAX_PRED];
};

/* probe_spec.flags. Mirrored by Spec* in spec.go. */
enum spec_flag {
	/*
	 * A uprobe on a function's first instruction: record the return
	 * address into its caller (x86-64: the word at the stack pointer;
	 * arm64: the link register), which kernels
	 * before 6.11 ("perf,x86: avoid missing caller address in stack
	 * traces captured in uprobe") leave out of the user stack there: the
	 * function has not pushed its frame pointer yet. User space puts it
	 * back.
	 */
	SPEC_STACK_ENTRY = 1,
	/*
	 * Record the events of the recorder itself too. A sched_switch event
	 * concerns two threads, and the one switched in may be any: when the
	 * recorder leaves a CPU to a traced thread, the event is that thread's
	 * switch-in, which off-CPU time needs.
	 */
	SPEC_KEEP_SELF = 2,
	/* The filter compares the comm: read it before evaluating the filter. */
	SPEC_FILTER_COMM = 4,
	/*
	 * A sched_switch, whose program runs in the thread switched out
	 * (prev): leave out, and count in own_switches, a switch whose two
	 * threads are each the recorder's or the idle task (tid 0). Recording
	 * system-wide, those were 99% of the events, and each fed the next:
	 * the recorder woke to read them. A switch between the recorder and
	 * another thread is kept: that thread's switch-in or switch-out.
	 */
	SPEC_SELF_SWITCH = 8,
	/*
	 * A rate limit (--max-rate): an event that passed the filter takes
	 * one of the probe's tokens, or is rejected (see rate_ok).
	 */
	SPEC_RATE_LIMIT = 16,
};

#define MAX_STACK 127		 /* frames a stack record holds: the kernel's perf_event_max_stack default */
#define STACK_PROBE_ID 0xfffe	 /* probe_id of a struct stack_record; mirrored by StackProbeID in sample.go */

/* stack_record.flags. Mirrored by StackRec* in sample.go. */
enum stack_rec_flag {
	STACK_REC_KERNEL = 1,  /* a kernel stack; else a user stack */
	STACK_REC_RETADDR = 2, /* retaddr holds the word at the user stack pointer (SPEC_STACK_ENTRY) */
	STACK_REC_FAULT = 4,   /* bpf_get_stack failed: no frames */
};

/*
 * The stack of the sample that follows it in the ring (same tid and time):
 * the header's probe_id is STACK_PROBE_ID and nargs the number of frames;
 * the record is as long as its frames. Built in a per-CPU scratch buffer
 * and copied with bpf_ringbuf_output, whose size may vary, where
 * bpf_ringbuf_reserve's must be a constant.
 */
struct stack_record {
	__u64 time;
	__u32 pid;
	__u32 tid;
	__u16 probe_id; /* STACK_PROBE_ID */
	__u16 cpu;
	__u16 nargs; /* frames */
	__u16 flags; /* enum stack_rec_flag */
	__u16 probe; /* the sample's probe_id */
	__u16 _pad[3];
	__u64 retaddr;
	__u64 frames[MAX_STACK];
};

/*
 * One event. Only a prefix is reserved, depending on the size class: the
 * header plus 2, 6 or 12 args, or the whole struct (12 args and 4 string
 * slots). Args at index >= nargs are zero. For a string arg the value is the
 * string's length without the NUL; the slot holds the NUL-terminated string,
 * bytes after the NUL are unspecified (stale ring data). Unused slots hold "".
 */
struct sample {
	__u64 time; /* bpf_ktime_get_boot_ns */
	__u32 pid;  /* tgid, in the initial PID namespace */
	__u32 tid;
	__u16 probe_id;
	__u16 cpu;
	__u16 nargs;
	__u16 flags; /* enum sample_flag */
	__u64 args[MAX_ARGS];
	char strs[MAX_STRS][STR_LEN];
};

/*
 * The comm of thread tid from now on: the samples of tid that follow it in
 * the ring carry no comm of their own. probe_id is COMM_PROBE_ID, nargs 0.
 */
struct comm_record {
	__u64 time;
	__u32 pid;
	__u32 tid;
	__u16 probe_id;
	__u16 cpu;
	__u16 nargs;
	__u16 flags;
	char comm[16];
};

/*
 * Per CPU: the thread (pid_tgid) and comm last recorded in a comm record and
 * the comm_gen then, and the bytes submitted to the CPU's ring since the
 * last forced wake-up.
 */
struct cpu_state {
	__u64 pid_tgid;
	__u64 gen;
	__u64 unwoken;
	__u64 comm[2];
	/*
	 * How deep programs are nested on this CPU: the scratch buffers'
	 * index. Here rather than in a map of its own: on this VM each
	 * further map an event touches cost about 40 ns (HelperCost).
	 */
	__u32 nest;
	__u32 _pad;
};

#define HDR_SIZE __builtin_offsetof(struct sample, args)
#define CLASS_SIZE(nargs) (HDR_SIZE + (nargs) * sizeof(__u64))

/*
 * Per-CPU staging. A CPU's samples are not reserved in its ring one by one:
 * they are appended to its stage, and the stage goes to the ring in one
 * bpf_ringbuf_output once it holds stage_bytes, or when user space runs
 * flush_stage on that CPU before it reads the rings (see Ring). One
 * reserve and submit (a spinlock, a cache line the reader also writes)
 * then serves a batch of samples: HelperCost measured 192-232 ns against
 * 299-315 for a reserve and submit per sample.
 *
 * A batch is one ring record: a sample header whose probe_id is
 * BATCH_PROBE_ID, then the staged samples, each a u32 length, a u32 0 and
 * the sample, as records sit in the ring itself. Comm and stack records go
 * straight to the ring, after the CPU's stage: a comm record applies to the
 * samples after it, a stack record to the sample that follows it.
 *
 * Only the outermost program on a CPU (nesting depth 0) appends to the
 * stage, so only it writes the stage's samples; a program nested inside it
 * (an interrupt, or on a preemptible kernel another task) and flush_stage
 * may take what it has committed and send it. The writer reserves its
 * place by reading used, writes there, and commits by moving used past its
 * sample only if used is still where it read it; if the committed part was
 * taken meanwhile, it sends its sample on its own. busy guards the commit
 * and the take, each a few instructions, against a program that
 * interrupts them: a take finding busy leaves the stage for later.
 *
 * The entries of the stages map past 0 are the scratch of nested programs:
 * their sample is written there and sent at once (as is a sample with
 * stacks at depth 0), so that the program fills one kind of buffer on
 * every path.
 */
#define STAGE_POS_MASK 4095	 /* used is below 4096: stage_bytes <= STAGE_MAX_BYTES */
#define STAGE_MAX_BYTES 3072	 /* mirrored by MaxStageBytes in load.go */
#define STAGE_SUB_HDR 8		 /* a staged record's u32 length and u32 0 */
#define STAGE_MIN_REC (STAGE_SUB_HDR + HDR_SIZE)

struct stage {
	__u32 used; /* bytes of committed records in buf */
	__u32 busy; /* a commit or take is under way */
	__u64 hdr[HDR_SIZE / 8]; /* the batch record's header: sent with buf */
	__u8 buf[STAGE_POS_MASK + 1 + 512];
};

/*
 * Never read: gives struct sample and the enums a place in BTF so that bpf2go
 * can generate Go mirrors and tests can check the Go constants against them.
 */
const struct btf_anchor {
	struct sample sample;
	struct comm_record comm_record;
	struct stack_record stack_record;
	struct pred_op pred_op;
	enum spec_flag spec_flag;
	enum stack_rec_flag stack_rec_flag;
	enum arg_kind kind;
	enum size_class size_class;
	enum sample_flag flag;
	enum addr_flag addr_flag;
	enum leaf_kind leaf_kind;
	enum leaf_flag leaf_flag;
	enum pred_kind pred_kind;
	enum pred_operand pred_operand;
} btf_anchor = {};

/* Set from Go before load. */
volatile const __u32 filter_tgid = 0;  /* only this tgid; 0 = all (uprobes: the kernel filters too) */
/* The recorder itself, whose own reads and writes system-wide kernel probes and tracepoints would see. */
volatile const __u32 self_tgid = 0;
/*
 * Nonzero: record only processes in the traced map (uprobes and tracepoints
 * alike; filter_tgid is then unused), which track_fork extends with every
 * process a traced one starts.
 */
volatile const __u32 follow = 0;
/* Byte offset of tgid in struct task_struct, from the kernel's BTF (follow). */
volatile const __u32 task_tgid_off = 0;
volatile const __u64 wakeup_bytes = 0; /* see wakeup_flags() */
/*
 * Nonzero: a comm record wakes the reader at once if it is the first of
 * its process, or of a new comm of it (an exec; see comm_wake): a recorder
 * of user stacks then reads the process's mappings while it runs, which a
 * short command may not do for long.
 */
volatile const __u32 wake_on_comm = 0;
/*
 * Byte offsets of thread.fsbase and thread.gsbase in struct task_struct,
 * taken from the kernel's BTF by the loader; 0 = unknown (ADDR_FS and
 * ADDR_GS reads then fail).
 */
volatile const __u32 task_fsbase_off = 0;
volatile const __u32 task_gsbase_off = 0;
/*
 * Byte offset of comm in struct task_struct, from the kernel's BTF; 0 =
 * unknown: the comm is then read with bpf_get_current_comm, which costs
 * more than a 16-byte read.
 */
volatile const __u32 task_comm_off = 0;
/*
 * Nonzero: the kernel has bpf_get_current_task_btf (5.11), whose pointer
 * the program may load from directly, so the comm is two plain loads
 * rather than a bpf_probe_read_kernel call. Set with task_comm_off.
 */
volatile const __u32 task_btf = 0;
/*
 * What the recording's specs need, set from user space before loading: the
 * largest size class, whether any has a filter, whether any records a
 * stack. The verifier reads them as constants and does not visit the code
 * of a class, the filter or the stacks that no spec takes (a spec that
 * needs it anyway is counted lost, never recorded wrong). The defaults
 * keep all of it.
 */
volatile const __u32 max_class = CLASS_ARGS12_STR4;
volatile const __u32 use_filters = 1;
volatile const __u32 use_stacks = 1;
/* A spec has a rate limit (SPEC_RATE_LIMIT); 0 leaves rate_ok out. */
volatile const __u32 use_rate_limit = 1;
/*
 * The end of the shortest record among the tracepoints the program is
 * attached to (tracefs format: the last field's offset + size). read_tp_word
 * loads only words that end at or before it: the kernel refuses to attach a
 * tracepoint program whose context loads reach past the record
 * (perf_event_set_bpf_prog, max_ctx_offset), and the verifier counts only
 * the loads it visits. 0: every field is read with bpf_probe_read_kernel.
 */
volatile const __u32 tp_ctx_end = 0;
/*
 * Send a CPU's stage to its ring once it holds this many bytes; 0 sends
 * every sample at once, for a reader that must see each event at once
 * (wakeup_bytes 0).
 */
volatile const __u32 stage_bytes = 1024;
/* Probe ids below this have lost counters: the lost map's row length. */
volatile const __u32 lost_stride = MAX_PROBES;
/*
 * The spec index of the attachment, for kernels without attach cookies
 * (before 5.15): one copy of the program is loaded per attachment with this
 * and fixed_spec_data set, and the verifier, which reads a frozen .rodata as
 * constants, never visits the bpf_get_attach_cookie call those kernels
 * lack. FIXED_SPEC_COOKIE (the default): the attachment's cookie indexes
 * probe_specs.
 */
#define FIXED_SPEC_COOKIE 0xffffffff
volatile const __u32 fixed_spec = FIXED_SPEC_COOKIE;
/*
 * With fixed_spec set, the spec itself (what PutSpec stored at fixed_spec):
 * the verifier reads it as constants too, so it checks only the code this
 * one spec runs (one size class, the kinds of its args), which makes each
 * copy quick to load.
 */
volatile const struct probe_spec fixed_spec_data = {};

/*
 * One ring buffer per CPU, indexed by CPU number: producers on different
 * CPUs never contend for a ring's lock and positions. The loader sizes the
 * template and creates a ring per possible CPU; user space merges the rings
 * by time.
 */
struct ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* overridden from Go */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* overridden from Go: possible CPUs */
	__type(key, __u32);
	__array(values, struct ring);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SPECS);
	__type(key, __u32);
	__type(value, struct probe_spec);
} probe_specs SEC(".maps");

/*
 * Lost counts: entry cpu * lost_stride + probe_id counts that probe's
 * samples dropped on that CPU because its ring was full. A plain array that
 * user space maps and reads in memory rather than a per-CPU array read by
 * syscall: a map syscall raises the kernel's bpf_prog_active on the
 * reader's CPU, and on PREEMPT_RT the reader can be preempted there, which
 * makes the kernel skip every kprobe, uprobe and tracepoint program on that
 * CPU meanwhile, uncounted (a 6.1-rt guest lost hundreds of events in a
 * row to the reader's lookups every 100 ms).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MAX_PROBES); /* overridden from Go: lost_stride * possible CPUs */
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_state SEC(".maps");

/* Events a probe's filter rejected, per CPU and by probe id. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_PROBES);
	__type(key, __u32);
	__type(value, __u64);
} filtered SEC(".maps");

/*
 * Rate limits (SPEC_RATE_LIMIT, --max-rate): entry probe_id holds the
 * probe's tokens. An event that passed the probe's filter takes one, or,
 * when none is left, is rejected before anything is sent and counted in
 * rate_limited. User space maps the array and adds tokens on a ticker, at
 * most one tick's worth ahead: the limit holds in the kernel whatever the
 * recorder does, and a refill that comes late makes the program reject
 * more, never fewer. CPUs that take the last token at once leave the count
 * below zero, which the next refill pays back.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MAX_PROBES); /* overridden from Go: lost_stride */
	__type(key, __u32);
	__type(value, __s64);
} tokens SEC(".maps");

/* Events a rate limit rejected, per CPU and by probe id. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_PROBES);
	__type(key, __u32);
	__type(value, __u64);
} rate_limited SEC(".maps");

/*
 * The recorder's threads (tid -> 1), for SPEC_SELF_SWITCH: user space puts
 * the threads it has when it loads the programs, and the program adds each
 * thread of the recorder it sees switched out (the Go runtime starts
 * threads as it needs them). A thread that exits stays: its tid, if
 * another process's thread gets it, has its switches with the idle task
 * left out.
 */
#define MAX_SELF_TIDS 1024
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_SELF_TIDS);
	__type(key, __u32);
	__type(value, __u8);
} self_tids SEC(".maps");

/* sched_switch events left out as the recorder's own (SPEC_SELF_SWITCH), per CPU and by probe id. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_PROBES);
	__type(key, __u32);
	__type(value, __u64);
} own_switches SEC(".maps");

/*
 * Where the sample of a probe with a filter is built: its values must be
 * known before the filter can say whether to reserve ring space at all.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_DEPTH);
	__type(key, __u32);
	__type(value, struct sample);
} sample_scratch SEC(".maps");

/* Index 0: the CPU's stage; 1 to SCRATCH_DEPTH-1: nested programs' scratch. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_DEPTH);
	__type(key, __u32);
	__type(value, struct stage);
} stages SEC(".maps");

/* Where a stack record is built (see struct stack_record). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_DEPTH);
	__type(key, __u32);
	__type(value, struct stack_record);
} stack_scratch SEC(".maps");

/*
 * The processes (tgids) recorded when following: user space puts the first
 * one, track_fork adds their children, user space removes exited ones.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TRACED);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

/*
 * Nonzero while the capture window is open: every program records only then.
 * User space sets it once every probe is attached and clears it before the
 * first link is closed, so that every probe covers the same interval.
 */
volatile __u32 armed = 0;
/* Children of traced processes added to the traced map, and those that did not fit. */
volatile __u64 tracked = 0;
volatile __u64 untracked = 0;

/*
 * Bumped by user space when it forgets the comms it holds: every CPU then
 * records the comm again before its next sample. A global beside armed, on
 * the page every event reads anyway.
 */
volatile __u64 comm_gen = 0;

/*
 * Wake-up policy. wakeup_bytes == 0: wake the reader on every event.
 * wakeup_bytes == ~0: let the kernel decide (flags 0: wake when the reader had
 * caught up). Otherwise wake it once wakeup_bytes were submitted to this
 * CPU's ring since the last forced wake-up: at least as often as "wakeup_bytes
 * are waiting", without asking the ring (bpf_ringbuf_query cost 3-5 ns per
 * event); the reader drains on a timer as well, so a quiet ring is still
 * emptied.
 */
static __always_inline __u64 wakeup_flags(struct cpu_state *st, __u32 size)
{
	__u64 thresh = wakeup_bytes;

	if (thresh == 0)
		return BPF_RB_FORCE_WAKEUP;
	if (thresh == ~0ULL)
		return 0;
	st->unwoken += size;
	if (st->unwoken >= thresh) {
		st->unwoken = 0;
		return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

/* Truncate v to size bytes, then sign- or zero-extend it back to 64 bits. */
static __always_inline __u64 extend(__u64 v, __u32 size, __u32 is_signed)
{
	__u32 shift;

	switch (size) {
	case 1:
		shift = 56;
		break;
	case 2:
		shift = 48;
		break;
	case 4:
		shift = 32;
		break;
	default:
		return v;
	}
	v <<= shift;
	if (is_signed)
		return (__u64)((__s64)v >> shift);
	return v >> shift;
}

/*
 * Read a 1, 2, 4 or 8 byte integer (anything else reads 8) into the low bytes
 * of *v. Reading exactly size bytes keeps a narrow value at the end of a
 * mapping readable.
 */
static __always_inline long read_int(__u64 *v, __u32 size, __u64 addr, int user)
{
	*v = 0;
	switch (size) {
	case 1:
		return user ? bpf_probe_read_user(v, 1, (const void *)addr)
			    : bpf_probe_read_kernel(v, 1, (const void *)addr);
	case 2:
		return user ? bpf_probe_read_user(v, 2, (const void *)addr)
			    : bpf_probe_read_kernel(v, 2, (const void *)addr);
	case 4:
		return user ? bpf_probe_read_user(v, 4, (const void *)addr)
			    : bpf_probe_read_kernel(v, 4, (const void *)addr);
	default:
		return user ? bpf_probe_read_user(v, 8, (const void *)addr)
			    : bpf_probe_read_kernel(v, 8, (const void *)addr);
	}
}

/*
 * Value of the register at byte offset reg of struct pt_regs. The verifier
 * only allows constant offsets into the context, so a switch picks the load:
 * a few compares instead of a bpf_probe_read_kernel call per register.
 */
#define REG_CASE(r)                                                                  \
	case __builtin_offsetof(struct pt_regs, r):                                  \
		/* the load in asm: clang would otherwise merge the cases into */    \
		/* one load at ctx + reg, which the verifier rejects */              \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                                \
			     : "=r"(*v)                                              \
			     : "r"(ctx), "i"(__builtin_offsetof(struct pt_regs, r))); \
		return 0;

static __always_inline long read_reg(void *ctx, __u32 reg, __u64 *v)
{
	switch (reg) {
#if defined(__TARGET_ARCH_x86)
	REG_CASE(r15)
	REG_CASE(r14)
	REG_CASE(r13)
	REG_CASE(r12)
	REG_CASE(bp)
	REG_CASE(bx)
	REG_CASE(r11)
	REG_CASE(r10)
	REG_CASE(r9)
	REG_CASE(r8)
	REG_CASE(ax)
	REG_CASE(cx)
	REG_CASE(dx)
	REG_CASE(si)
	REG_CASE(di)
	REG_CASE(orig_ax)
	REG_CASE(ip)
	REG_CASE(cs)
	REG_CASE(flags)
	REG_CASE(sp)
	REG_CASE(ss)
#else
	/*
	 * arm64: the argument and return registers by switch; x8 to x30
	 * and sp (USDT operands at -O2, the stack pointer) by one read of
	 * the context. A switch over all 32 made 6.1's verifier give up on
	 * a program with two pointer chains (1,000,001 instructions).
	 */
	REG_CASE(regs[0])
	REG_CASE(regs[1])
	REG_CASE(regs[2])
	REG_CASE(regs[3])
	REG_CASE(regs[4])
	REG_CASE(regs[5])
	REG_CASE(regs[6])
	REG_CASE(regs[7])
	default:
		if (reg <= REG_SP && !(reg & 7))
			return bpf_probe_read_kernel(v, sizeof(*v), (char *)ctx + reg);
#endif
	}
	*v = 0;
	return -1;
}

/*
 * The 8-byte word of a tracepoint record at byte offset off (8..120, a
 * multiple of 8), loaded from the context as read_reg loads a register:
 * the verifier lets a tracepoint program read its record at constant,
 * size-aligned offsets from 8 up to PERF_MAX_TRACE_SIZE, and a few compares
 * cost less than a bpf_probe_read_kernel call. Returns -1 for a word it
 * does not load (past 120 or past tp_ctx_end).
 */
#define TP_WORD_CASE(o)                                                        \
	case (o):                                                              \
		if ((o) + 8 > tp_ctx_end)                                      \
			break;                                                 \
		asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(*v) : "r"(ctx), "i"(o)); \
		return 0;

static __always_inline long read_tp_word(void *ctx, __u32 off, __u64 *v)
{
	switch (off) {
	TP_WORD_CASE(8)
	TP_WORD_CASE(16)
	TP_WORD_CASE(24)
	TP_WORD_CASE(32)
	TP_WORD_CASE(40)
	TP_WORD_CASE(48)
	TP_WORD_CASE(56)
	TP_WORD_CASE(64)
	TP_WORD_CASE(72)
	TP_WORD_CASE(80)
	TP_WORD_CASE(88)
	TP_WORD_CASE(96)
	TP_WORD_CASE(104)
	TP_WORD_CASE(112)
	TP_WORD_CASE(120)
	}
	*v = 0;
	return -1;
}

/*
 * Copy the C string at src (at most limit-1 chars, limit in 1..STR_LEN) into
 * dst and return its length without the NUL. If the copy filled the limit,
 * peek at the last byte copied from: when it is not the NUL, the source was
 * longer and the string is marked truncated.
 */
static __always_inline __u64 read_str(char *dst, __u64 src, __u32 limit, int user, __u16 *flags)
{
	long n;
	char c = 0;

	if (limit > STR_LEN)
		limit = STR_LEN;
	if (limit == 0)
		limit = 1;
	if (user)
		n = bpf_probe_read_user_str(dst, limit, (const void *)src);
	else
		n = bpf_probe_read_kernel_str(dst, limit, (const void *)src);
	if (n <= 0) {
		dst[0] = 0;
		*flags |= SAMPLE_READ_FAULT;
		return 0;
	}
	if (n == limit) {
		if (user)
			bpf_probe_read_user(&c, 1, (const void *)(src + limit - 1));
		else
			bpf_probe_read_kernel(&c, 1, (const void *)(src + limit - 1));
		if (c)
			*flags |= SAMPLE_STR_TRUNCATED;
	}
	return n - 1;
}

/*
 * User address of a memory operand: base register (unless ADDR_NO_BASE),
 * plus index register * scale for ARG_SIB, plus the displacement, plus the
 * thread's %fs or %gs base for a segment-prefixed operand.
 */
static __always_inline long operand_addr(void *ctx, const struct arg_spec *a, __u64 *addr)
{
	__u64 base = 0, idx = 0, seg = 0;
	__u32 off = 0;
	long err = 0;

	if (!(a->flags & ADDR_NO_BASE))
		err = read_reg(ctx, a->reg, &base);
	if (!err && a->kind == ARG_SIB)
		err = read_reg(ctx, a->index_reg, &idx);
	if (!err && (a->flags & (ADDR_FS | ADDR_GS))) {
		off = (a->flags & ADDR_FS) ? task_fsbase_off : task_gsbase_off;
		if (!off)
			err = -1;
		else
			err = bpf_probe_read_kernel(&seg, sizeof(seg), (char *)bpf_get_current_task() + off);
	}
	*addr = base + idx * a->scale + a->off + seg;
	return err;
}

/*
 * Whether a C string at addr is in user memory: on x86-64 user addresses
 * end below 1 << 47 and kernel ones start at 0xffff8000_00000000, so the
 * address alone picks bpf_probe_read_user_str or _kernel_str (each refuses
 * the other's addresses). A kernel function's char * points either way:
 * do_sys_openat2's filename into user memory, a dentry's name into the
 * kernel's.
 */
static __always_inline int user_addr(__u64 addr)
{
#if defined(__TARGET_ARCH_arm64)
	/*
	 * arm64: bit 55 picks the user (TTBR0) or kernel (TTBR1) half, the
	 * top byte being ignored: a tagged user pointer (MTE, HWASan) has
	 * bits set above 55.
	 */
	return !(addr & (1ULL << 55));
#else
	return addr < (1ULL << 47);
#endif
}

/*
 * The current thread's comm, as two words. With task_btf, from the task's
 * BTF pointer: two loads the JIT guards against faults, no helper call
 * (BenchmarkHelperCost on 6.18, warm: 27 ns over an empty program, against
 * 60 for a bpf_probe_read_kernel of the 16 bytes; on cold caches, with one
 * program as recording runs, BenchmarkCommRead showed no difference).
 */
static __always_inline void current_comm(__u64 comm[2])
{
	if (task_btf && task_comm_off) {
		char *t = (char *)bpf_get_current_task_btf();

		comm[0] = *(__u64 *)(t + task_comm_off);
		comm[1] = *(__u64 *)(t + task_comm_off + 8);
	} else if (task_comm_off) {
		bpf_probe_read_kernel(comm, 2 * sizeof(__u64), (char *)bpf_get_current_task() + task_comm_off);
	} else {
		bpf_get_current_comm(comm, 2 * sizeof(__u64));
	}
}

/*
 * wake_on_comm: the processes (tgid) whose comm record woke the reader, with
 * the first 8 bytes of that comm. A comm record goes ahead of a thread's
 * samples whenever its CPU recorded another thread since: recording
 * sched_switch, ahead of nearly every sample. Waking the reader for each
 * (it read nothing new: the process's mappings were read at its first)
 * made the reader switch 22,000 times a second, each switch recorded
 * and waking it again.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); /* overridden from Go: 1 without wake_on_comm */
	__type(key, __u32);
	__type(value, __u64);
} comm_woken SEC(".maps");

/*
 * Whether the current thread's comm record wakes the reader: the first of
 * its process, or the first with a comm (its first 8 bytes) the process did
 * not have when it last woke it (an exec). A global function without
 * arguments: the lookups cost the verifier once, not on every path to
 * emit_comm (passing it the tgid and comm, the uprobe program took 250,000
 * instructions to verify rather than 215,000).
 */
__noinline int comm_wake(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 comm[2], comm0, *seen;

	current_comm(comm);
	comm0 = comm[0];
	seen = bpf_map_lookup_elem(&comm_woken, &tgid);

	if (seen && *seen == comm0)
		return 0;
	bpf_map_update_elem(&comm_woken, &tgid, &comm0, 0);
	return 1;
}

/* The result of expr_eval: a per-CPU word, as a global function returns only an int. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_DEPTH);
	__type(key, __u32);
	__type(value, __u64);
} expr_out SEC(".maps");

/*
 * Run the expression of arg i of the spec at key (fixed_spec_data when the
 * program has a fixed spec) on v, the value its kind gave: nread pointer
 * loads, then the leaf; for a LEAF_STR, the string's address. The result
 * goes to expr_out; nonzero on a fault. Memory is user or kernel memory by
 * its address.
 *
 * A global function, which the verifier checks once, on its own: inlined
 * into every argument slot of every size class it doubled the uprobe
 * program's verified instructions (173k to 331k) and the time to ready in
 * the 6.1 guests (1.4 s to 3.0 s for 4 probes).
 */
__noinline int expr_eval(__u64 v, __u32 key, __u64 i, __u32 depth)
{
	const struct arg_spec *a;
	const struct probe_spec *spec;
	__u32 n;
	__u64 *out;
	int user;

	if (fixed_spec != FIXED_SPEC_COOKIE) {
		spec = (const struct probe_spec *)&fixed_spec_data;
		asm volatile("" : "+r"(spec));
	} else {
		spec = bpf_map_lookup_elem(&probe_specs, &key);
	}
	out = bpf_map_lookup_elem(&expr_out, &depth);
	if (!spec || !out || i >= MAX_ARGS)
		return -1;
	/* i is 64 bits wide: a global function's arguments are, to the verifier. */
	a = &spec->args[i];
	n = a->nread;
	user = a->leaf_flags & LEAF_USER;
	for (__u32 k = 0; k < MAX_READS; k++) {
		if (k >= n)
			break;
		v += a->read_off[k];
		if (read_int(&v, 8, v, user || user_addr(v)))
			return -1;
	}
	v += a->leaf_off;
	if (a->leaf == LEAF_READ) {
		if (a->leaf_flags & LEAF_STR) {
			/* A char *: the string's address. */
			if (read_int(&v, 8, v, user || user_addr(v)))
				return -1;
		} else {
			if (read_int(&v, a->leaf_size, v, user || user_addr(v)))
				return -1;
			v = extend(v, a->leaf_size, a->leaf_flags & LEAF_SIGNED);
		}
	}
	*out = v;
	return 0;
}

/*
 * The value of arg i's expression on v (see expr_eval); a LEAF_STR copies
 * the C string at the result into the arg's string slot and returns its
 * length.
 */
static __always_inline __u64 expr(const struct arg_spec *a, __u64 v, struct sample *s, const int with_strs,
				  __u16 *flags, __u32 key, __u32 i, __u32 depth)
{
	__u64 *out;

	if (expr_eval(v, key, i, depth))
		goto fault;
	out = bpf_map_lookup_elem(&expr_out, &depth);
	if (!out)
		goto fault;
	v = *out;
	if (a->leaf_flags & LEAF_STR) {
		if (!with_strs)
			return 0;
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], v, STR_LEN,
				(a->leaf_flags & LEAF_USER) || user_addr(v), flags);
	}
	return v;
fault:
	if (with_strs && (a->leaf_flags & LEAF_STR))
		s->strs[a->str_slot & (MAX_STRS - 1)][0] = 0;
	*flags |= SAMPLE_READ_FAULT;
	return 0;
}

/* Value of one uprobe/uretprobe/USDT/kprobe/kretprobe arg; string kinds write into strs. */
static __always_inline __u64 uprobe_arg(void *ctx, const struct arg_spec *a, struct sample *s,
					const int with_strs, __u16 *flags, __u32 key, __u32 i, __u32 depth)
{
	__u64 v = 0, base = 0;
	long err = 0;

	switch (a->kind) {
	case ARG_CONST:
		return a->off;
	case ARG_RETVAL:
		err = read_reg(ctx, REG_RET, &v);
		v = extend(v, a->size, a->is_signed);
		break;
	case ARG_REG:
		err = read_reg(ctx, a->reg, &v);
		v = extend(v, a->size, a->is_signed);
		break;
	case ARG_REG_DEREF:
	case ARG_SIB:
		err = operand_addr(ctx, a, &base);
		if (!err)
			err = read_int(&v, a->size, base, 1);
		v = extend(v, a->size, a->is_signed);
		break;
	case ARG_USER_STR:
	case ARG_ADDR_STR:
		if (!with_strs)
			return 0;
		err = read_reg(ctx, a->reg, &base);
		base += a->off;
		if (err) {
			s->strs[a->str_slot & (MAX_STRS - 1)][0] = 0;
			break;
		}
		/* A kernel function's char * may point into either memory. */
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], base, STR_LEN,
				a->kind == ARG_USER_STR || user_addr(base), flags);
	case ARG_REG_DEREF_STR:
		if (!with_strs)
			return 0;
		err = operand_addr(ctx, a, &base);
		if (!err)
			err = read_int(&base, 8, base, 1);
		if (err) {
			s->strs[a->str_slot & (MAX_STRS - 1)][0] = 0;
			break;
		}
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], base, STR_LEN, 1, flags);
	default:
		return 0;
	}
	if (err) {
		*flags |= SAMPLE_READ_FAULT;
		return 0;
	}
	if (a->leaf)
		return expr(a, v, s, with_strs, flags, key, i, depth);
	return v;
}

/*
 * Value of one tracepoint arg; ctx is the raw tracepoint record. It runs no
 * expression (arg_spec.leaf): that cost the program 118,000 more verified
 * instructions (38,000 to 175,000; 6.18), for pointers that tracepoint
 * records rarely hold. Offsets are
 * masked to 16 bits: the verifier only allows bounded offsets from ctx, and
 * records are far smaller than that.
 */
static __always_inline __u64 tp_arg(void *ctx, const struct arg_spec *a, struct sample *s,
				    const int with_strs, __u16 *flags)
{
	char *rec = ctx;
	__u32 off = a->off & 0xffff, loc = 0;
	__u64 v = 0;
	long err = 0;

	switch (a->kind) {
	case ARG_CONST:
		return a->off;
	case ARG_TP_FIELD:
		/*
		 * A naturally aligned field lies inside one word: load the
		 * word and shift (little-endian), else read it.
		 */
		if ((a->size == 1 || a->size == 2 || a->size == 4 || a->size == 8) && !(off & (a->size - 1)) &&
		    !read_tp_word(ctx, off & ~7u, &v))
			v >>= (off & 7) * 8;
		else
			err = read_int(&v, a->size, (__u64)(rec + off), 0);
		v = extend(v, a->size, a->is_signed);
		break;
	case ARG_TP_CHARARRAY:
		if (!with_strs)
			return 0;
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], (__u64)(rec + off), a->size, 0,
				flags);
	case ARG_TP_DATALOC_STR:
		if (!with_strs)
			return 0;
		err = bpf_probe_read_kernel(&loc, sizeof(loc), rec + off);
		if (err) {
			s->strs[a->str_slot & (MAX_STRS - 1)][0] = 0;
			break;
		}
		/* low 16 bits: offset from the record start; high 16: length incl. NUL */
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], (__u64)(rec + (loc & 0xffff)),
				STR_LEN, 0, flags);
	case ARG_TP_USER_STR:
		if (!with_strs)
			return 0;
		err = read_int(&v, 8, (__u64)(rec + off), 0);
		if (err) {
			s->strs[a->str_slot & (MAX_STRS - 1)][0] = 0;
			break;
		}
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], v, STR_LEN, 1, flags);
	default:
		return 0;
	}
	if (err) {
		*flags |= SAMPLE_READ_FAULT;
		return 0;
	}
	return v;
}

/*
 * Value of one fentry/fexit arg. bpf_get_func_arg takes the argument number
 * as a variable (the verifier lets a tracing program read its context only
 * at constant offsets) and returns an error past the function's arguments;
 * the verifier inlines it and bpf_get_func_ret.
 */
static __always_inline __u64 func_arg(void *ctx, const struct arg_spec *a, struct sample *s,
				      const int with_strs, __u16 *flags, __u32 key, __u32 i, __u32 depth)
{
	__u64 v = 0;
	long err = 0;

	switch (a->kind) {
	case ARG_CONST:
		return a->off;
	case ARG_FUNC_ARG:
		err = bpf_get_func_arg(ctx, a->reg, &v);
		v = extend(v, a->size, a->is_signed);
		break;
	case ARG_FUNC_RET:
		err = bpf_get_func_ret(ctx, &v);
		v = extend(v, a->size, a->is_signed);
		break;
	case ARG_FUNC_STR:
		if (!with_strs)
			return 0;
		err = bpf_get_func_arg(ctx, a->reg, &v);
		if (err) {
			s->strs[a->str_slot & (MAX_STRS - 1)][0] = 0;
			break;
		}
		v += a->off;
		return read_str(s->strs[a->str_slot & (MAX_STRS - 1)], v, STR_LEN, user_addr(v), flags);
	default:
		return 0;
	}
	if (err) {
		*flags |= SAMPLE_READ_FAULT;
		return 0;
	}
	if (a->leaf)
		return expr(a, v, s, with_strs, flags, key, i, depth);
	return v;
}

/* Fill a reserved record that has room for cap args (and strings if with_strs). */
static __always_inline void fill(void *ctx, const struct probe_spec *spec, struct sample *s, __u64 now,
				 __u64 pid_tgid, __u32 cpu, const __u32 cap, const int with_strs, const int ctx_kind,
				 __u32 key, __u32 depth)
{
	__u32 n = spec->nargs;
	__u16 flags = 0;

	if (n > cap)
		n = cap;
	s->time = now;
	s->pid = pid_tgid >> 32;
	s->tid = (__u32)pid_tgid;
	s->probe_id = spec->probe_id;
	s->cpu = cpu;
	if (with_strs) {
		/* Unused slots read as empty strings. */
		for (__u32 k = 0; k < MAX_STRS; k++)
			s->strs[k][0] = 0;
	}

	for (__u32 i = 0; i < cap; i++) {
		__u64 v = 0;

		if (i < n) {
			if (ctx_kind == CTX_TP)
				v = tp_arg(ctx, &spec->args[i], s, with_strs, &flags);
			else if (ctx_kind == CTX_FUNC)
				v = func_arg(ctx, &spec->args[i], s, with_strs, &flags, key, i, depth);
			else
				v = uprobe_arg(ctx, &spec->args[i], s, with_strs, &flags, key, i, depth);
		}
		s->args[i] = v;
	}
	s->nargs = n;
	s->flags = flags;
}

__noinline int stage_flush(__u32 cpu, __u32 idx);

/*
 * Send the current thread's comm ahead of its sample unless this CPU's last
 * comm record was for this thread, with this comm, since comm_gen last
 * changed. Comparing the comm itself, not waiting for a rename to be
 * announced, keeps it right through prctl(PR_SET_NAME) and exec: their
 * task_rename tracepoint fires before the kernel changes the comm. Returns
 * nonzero if the ring is full: the sample must then be dropped too, or user
 * space would attribute it to a stale comm.
 */
static __always_inline int emit_comm(void *rb, struct cpu_state *st, __u64 now, __u64 pid_tgid,
				     __u32 cpu)
{
	__u64 comm[2] = {};
	struct comm_record *r;
	__u64 gen;

	current_comm(comm);
	gen = comm_gen;
	if (st->pid_tgid == pid_tgid && st->gen == gen && st->comm[0] == comm[0] && st->comm[1] == comm[1])
		return 0;
	/*
	 * The samples the CPU staged go first: the comm record applies to the
	 * samples after it in the ring.
	 */
	stage_flush(cpu, 0);
	r = bpf_ringbuf_reserve(rb, sizeof(*r), 0);
	if (!r)
		return -1;
	r->time = now;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->probe_id = COMM_PROBE_ID;
	r->cpu = cpu;
	r->nargs = 0;
	r->flags = 0;
	__builtin_memcpy(r->comm, comm, sizeof(comm));
	/* The sample that follows decides the wake-up, unless wake_on_comm. */
	bpf_ringbuf_submit(r, wake_on_comm && comm_wake() ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	st->unwoken += sizeof(*r);
	st->pid_tgid = pid_tgid;
	st->gen = gen;
	st->comm[0] = comm[0];
	st->comm[1] = comm[1];
	return 0;
}

#define STACK_HDR __builtin_offsetof(struct stack_record, frames)

/*
 * Send the kernel (user == 0) or user stack of the current event ahead of
 * its sample. Returns nonzero if the ring is full.
 */
static __always_inline int emit_stack(void *ctx, void *rb, struct cpu_state *st, __u64 now, __u64 pid_tgid,
				      __u32 cpu, const struct probe_spec *spec, const int user, const int ctx_kind,
				      __u32 nest)
{
	__u32 depth = user ? spec->ustack : spec->kstack;
	struct stack_record *r = bpf_map_lookup_elem(&stack_scratch, &nest);
	long n;

	if (!r)
		return 0;
	if (depth > MAX_STACK)
		depth = MAX_STACK;
	if (depth < 1)
		depth = 1;
	r->flags = user ? 0 : STACK_REC_KERNEL;
	n = bpf_get_stack(ctx, r->frames, depth * sizeof(__u64), user ? BPF_F_USER_STACK : 0);
	if (n < 0) {
		n = 0;
		r->flags |= STACK_REC_FAULT;
	}
	if (n > MAX_STACK * sizeof(__u64))
		n = MAX_STACK * sizeof(__u64);
	n &= ~7L;
	r->retaddr = 0;
	if (ctx_kind == CTX_REGS && user && (spec->flags & SPEC_STACK_ENTRY)) {
#ifdef REG_LR
		/* the call left the return address in the link register */
		if (!read_reg(ctx, REG_LR, &r->retaddr))
			r->flags |= STACK_REC_RETADDR;
#else
		/* the call pushed the return address: it is the word at sp */
		__u64 sp = 0;

		if (!read_reg(ctx, REG_SP, &sp) &&
		    !bpf_probe_read_user(&r->retaddr, sizeof(r->retaddr), (const void *)sp))
			r->flags |= STACK_REC_RETADDR;
#endif
	}
	r->time = now;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->probe_id = STACK_PROBE_ID;
	r->cpu = cpu;
	r->nargs = n / sizeof(__u64);
	r->probe = spec->probe_id;
	if (bpf_ringbuf_output(rb, r, STACK_HDR + n, BPF_RB_NO_WAKEUP))
		return -1;
	st->unwoken += STACK_HDR + n;
	return 0;
}

/* Compare x with the constant of a comparison op: 0 or 1. */
static __always_inline __u64 compare(const struct pred_op *p, __u64 x)
{
	__u64 c = p->val;
	__s64 sx = x, sc = c;

	switch (p->op) {
	case PRED_EQ:
		return x == c;
	case PRED_NE:
		return x != c;
	case PRED_LT:
		return p->is_signed ? sx < sc : x < c;
	case PRED_LE:
		return p->is_signed ? sx <= sc : x <= c;
	case PRED_GT:
		return p->is_signed ? sx > sc : x > c;
	case PRED_GE:
		return p->is_signed ? sx >= sc : x >= c;
	}
	return 0;
}

/* The low `len` bytes of a little-endian word, len 0..8. */
static __always_inline __u64 low_bytes(__u64 w, __u32 len)
{
	if (len >= 8)
		return w;
	return w & ((1ULL << (len * 8)) - 1);
}

#ifdef BPFTAPE_RATE_LIMIT
/*
 * The rate limits' code is in a second build of this file (bpftaperl,
 * with BPFTAPE_RATE_LIMIT), loaded only when a probe has a limit. In the
 * same program, gated by a volatile const, it cost 6.1's verifier more
 * than 53,000 instructions on a kprobe with filters, strings and pointer
 * chains (947,000 before): past its limit of a million.
 */
/*
 * Whether an event of a probe with spec flags flags and id id may be
 * recorded under the probe's rate limit (SPEC_RATE_LIMIT): it takes a token
 * if one is left. No clock is read, and a rejected event only reads the
 * token count, which the CPUs share. Inline: as a global function its call
 * cost a rejected event 8-10 ns more (82 ns against 72, the empty program
 * 52, bench's progtime on this VM), and the tracepoint program 162,000
 * verified instructions rather than 150,000.
 */
static __always_inline int rate_ok(__u32 flags, __u32 id)
{
	__s64 *tok;

	if (!(flags & SPEC_RATE_LIMIT))
		return 1;
	tok = bpf_map_lookup_elem(&tokens, &id);
	if (!tok)
		return 1;
	if (*(volatile __s64 *)tok > 0) {
		__sync_fetch_and_add(tok, -1);
		return 1;
	}
	return 0;
}

/*
 * Whether the probe of spec flags flags and id id has a rate limit and no
 * token left. It takes none: rate_ok takes the token later, and an event
 * that finds none left then is rejected there.
 */
static __always_inline int rate_spent(__u32 flags, __u32 id)
{
	__s64 *tok;

	if (!(flags & SPEC_RATE_LIMIT))
		return 0;
	tok = bpf_map_lookup_elem(&tokens, &id);
	return tok && *(volatile __s64 *)tok <= 0;
}

/*
 * Whether the rate limit of spec rejects the event (rate_ok), which is
 * then counted in rate_limited, atomically: a program nested on the CPU
 * may count too. It sets *key to the probe id then (the caller returns).
 * The count is here, in the caller's branch, not in a function of its own:
 * with rate_ok a global function, a branch that only returned made the
 * tracepoint program take 546,000 instructions to verify rather than
 * 162,000, and the count at the end of filter_pass made that one alone
 * pass the limit of a million (6.18).
 */
static __always_inline int rate_rejects(const struct probe_spec *spec, __u32 *key)
{
	__u64 *cnt;

	if (!use_rate_limit || rate_ok(spec->flags, spec->probe_id))
		return 0;
	*key = spec->probe_id;
	cnt = bpf_map_lookup_elem(&rate_limited, key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 1;
}

#endif

/*
 * Whether the sample in sample_scratch passes the filter of the spec at
 * key (fixed_spec_data when the program has a fixed spec). The postfix
 * operations keep their truth values on a stack of bits in one register
 * (bit 0 the top), so a bounded loop with no memory of its own runs them;
 * user space checks that the stack never underflows and ends with one
 * value.
 *
 * A global function, which the verifier checks once, on its own: inlined,
 * every state in which fill() can end walked the loop again, and the
 * program passed the verifier's limit of a million instructions. Global
 * functions take only scalars and the context on older kernels, hence the
 * key and the lookups here.
 */
__noinline int filter_pass(__u32 key, __u32 depth)
{
	const struct probe_spec *spec;
	struct sample *s;
	__u32 n;
	__u64 stack = 0, comm[2] = {}, x, b;

	if (fixed_spec != FIXED_SPEC_COOKIE) {
		spec = (const struct probe_spec *)&fixed_spec_data;
		asm volatile("" : "+r"(spec));
	} else {
		spec = bpf_map_lookup_elem(&probe_specs, &key);
	}
	s = bpf_map_lookup_elem(&sample_scratch, &depth);
	if (!spec || !s)
		return 0;
	n = spec->npred;

	if (spec->flags & SPEC_FILTER_COMM)
		current_comm(comm);
	for (__u32 i = 0; i < MAX_PRED; i++) {
		const struct pred_op *p = &spec->pred[i];

		if (i >= n)
			break;
		switch (p->op) {
		case PRED_AND:
			b = stack & (stack >> 1) & 1;
			stack = (stack >> 2) << 1 | b;
			continue;
		case PRED_OR:
			b = (stack | (stack >> 1)) & 1;
			stack = (stack >> 2) << 1 | b;
			continue;
		case PRED_NOT:
			stack ^= 1;
			continue;
		}
		switch (p->operand) {
		case OPND_FIELD:
			x = s->args[p->field < MAX_ARGS ? p->field : 0];
			break;
		case OPND_PID:
			x = s->pid;
			break;
		case OPND_TID:
			x = s->tid;
			break;
		case OPND_CPU:
			x = s->cpu;
			break;
		case OPND_COMM:
			/* Equal when both words agree on the constant's bytes. */
			b = low_bytes(comm[0], p->len) == p->val &&
			    (p->len <= 8 || low_bytes(comm[1], p->len - 8) == p->val2);
			stack = stack << 1 | (p->op == PRED_NE ? !b : b);
			continue;
		default:
			x = 0;
		}
		stack = stack << 1 | compare(p, x);
	}
	return n == 0 || (stack & 1);
}

/*
 * Whether the current process is one being recorded: 1 yes, 0 no, 2 it is
 * the recorder, whose events only a spec with SPEC_KEEP_SELF records. It runs first, while
 * nothing else is live: a map lookup later on made the verifier explore
 * the rest of the program twice (~8x the load time).
 */
static __always_inline int wanted(__u64 pid_tgid)
{
	__u32 tgid = pid_tgid >> 32;

	if (tgid == self_tgid)
		return 2;
	if (follow)
		return bpf_map_lookup_elem(&traced, &tgid) != 0;
	return !filter_tgid || tgid == filter_tgid;
}

#ifdef BPFTAPE_RATE_LIMIT
/*
 * Whether the rate limit rejects the event before anything else is done
 * for it, the nesting count included, in the programs of a rate-limited
 * attachment (probe_uprobe_rl, probe_tracepoint_rl: bpf.RateLimitedCopies),
 * whose spec is fixed: the tests record_at makes first (armed, wanted, the
 * recorder's own events), and whether a token is left (rate_spent). An
 * event with no filter or sched_switch test to pass first that finds none
 * is rejected here and counted; every other goes on to record, which
 * takes its token (or rejects it) as before. Checked after the nesting
 * count, a rejected event cost 3-4 ns more (73 ns against 69-70, the
 * empty program 49-51; bench's progtime).
 *
 * The pid is read first, so that the events of processes not recorded
 * take no token, and again by record_at for an event that goes on. A
 * program of their own, not a check in record: there, compiled into the
 * cookie programs too, it changed their instructions, and the verifier's
 * work on the tracepoint program with a filter went from 150,000
 * instructions to between 155,000 and 345,000 on 6.18 as the check's form
 * changed; with the pid handed to record_at, the uprobe program's went to
 * 503,000.
 */
static __always_inline int rate_rejects_early(void)
{
	const struct probe_spec *spec;
	__u32 key;
	__u64 *cnt;
	int self;

	if (!armed)
		return 1;
	self = wanted(bpf_get_current_pid_tgid());
	if (!self)
		return 1;
	spec = (const struct probe_spec *)&fixed_spec_data;
	asm volatile("" : "+r"(spec));
	if (self == 2 && !(spec->flags & SPEC_KEEP_SELF))
		return 1;
	if (spec->npred || (spec->flags & SPEC_SELF_SWITCH) || !use_rate_limit ||
	    !rate_spent(spec->flags, spec->probe_id))
		return 0;
	key = spec->probe_id;
	cnt = bpf_map_lookup_elem(&rate_limited, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 1;
}
#endif

/*
 * Whether the current thread, pid_tgid, is the recorder's or the idle task
 * (SPEC_SELF_SWITCH). A recorder's thread joins self_tids.
 *
 * This and own_switch are global functions, which return only a scalar:
 * record_at's own tests on pid_tgid, or the map lookups inline, would tell
 * the verifier something of the live registers on each outcome, and it
 * walked the rest of the tracepoint program once for each (148,000
 * instructions to 715,000 on 6.18).
 */
__noinline int selfish(__u64 pid_tgid)
{
	__u32 tid = pid_tgid, tgid = pid_tgid >> 32;
	__u8 one = 1;

	if (!tid)
		return 1;
	if (tgid != self_tgid)
		return 0;
	if (!bpf_map_lookup_elem(&self_tids, &tid))
		bpf_map_update_elem(&self_tids, &tid, &one, 0);
	return 1;
}

/*
 * Whether a sched_switch from the recorder or the idle task (selfish) to
 * the thread next is the recorder's own: next is the idle task or one of
 * the recorder's threads. It then counts the event in own_switches for
 * probe id.
 */
__noinline int own_switch(__u32 next, __u32 id)
{
	__u64 *cnt;

	if (next && !bpf_map_lookup_elem(&self_tids, &next))
		return 0;
	cnt = bpf_map_lookup_elem(&own_switches, &id);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return 1;
}

/*
 * Count one sample of probe id lost on cpu. Atomic: on a preemptible kernel
 * another program may count on the same CPU meanwhile.
 */
static __always_inline void count_lost(__u32 cpu, __u32 id)
{
	__u32 key;
	__u64 *cnt;

	if (id >= lost_stride)
		return;
	key = cpu * lost_stride + id;
	cnt = bpf_map_lookup_elem(&lost, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
}

/*
 * Send the stage at index idx of this CPU (see struct stage) to its ring:
 * the committed samples, unless a commit or take is under way; one sample
 * goes as itself, more as a batch. If the ring is full, each sample in the
 * batch is counted lost. A global function: the verifier checks it, and its
 * loop, once.
 */
__noinline int stage_flush(__u32 cpu, __u32 idx)
{
	__u32 zero = 0, n, off = 0, len, id;
	struct cpu_state *st;
	struct stage *sg;
	long err;
	void *rb;

	sg = bpf_map_lookup_elem(&stages, &idx);
	rb = bpf_map_lookup_elem(&rings, &cpu);
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!sg || !rb || !st || sg->busy || !sg->used)
		return 0;
	sg->busy = 1;
	asm volatile("" ::: "memory");
	n = sg->used;
	sg->used = 0;
	asm volatile("" ::: "memory");
	sg->busy = 0;
	n &= STAGE_POS_MASK;
	/* One record goes as itself, without a batch around it. */
	len = *(__u32 *)sg->buf;
	if (n == STAGE_SUB_HDR + ((len + 7) & ~7)) {
		len = (n - STAGE_SUB_HDR) & STAGE_POS_MASK;
		err = bpf_ringbuf_output(rb, sg->buf + STAGE_SUB_HDR, len, wakeup_flags(st, len));
	} else {
		((__u16 *)sg->hdr)[8] = BATCH_PROBE_ID;
		err = bpf_ringbuf_output(rb, sg->hdr, HDR_SIZE + n, wakeup_flags(st, HDR_SIZE + n));
	}
	if (!err)
		return 0;
	for (__u32 i = 0; i < (STAGE_POS_MASK + 1) / STAGE_MIN_REC; i++) {
		if (off + STAGE_MIN_REC > n)
			break;
		off &= STAGE_POS_MASK;
		len = *(__u32 *)(sg->buf + off);
		id = *(__u16 *)(sg->buf + off + STAGE_SUB_HDR + __builtin_offsetof(struct sample, probe_id));
		count_lost(cpu, id);
		off += STAGE_SUB_HDR + ((len + 7) & ~7);
	}
	return 0;
}

/*
 * Commit the sample just written at offset pos of the stage at index depth
 * and send the stage when it is full, or at once if now (a nested program,
 * a sample with stacks). If the committed part was taken while the sample
 * was written, send the sample on its own. Returns nonzero if it was lost.
 *
 * A global function: the verifier checks it once, not once for each state
 * in which fill() ends. What stays live across fill matters as much: with
 * the comm record staged too and the commit inline, a kprobe with a
 * pointer chain, a string and a filter passed the verifier's limit of a
 * million instructions on 6.1 (on this host's 6.18 the str-and-filter
 * uprobe program took 306,000, against 229,000 before staging; now
 * 213,000).
 */
__noinline int stage_commit(__u32 cpu, __u32 depth, __u32 pos, __u32 size, __u32 now)
{
	__u32 zero = 0, end, committed;
	struct cpu_state *st;
	struct stage *sg;
	void *rb;

	sg = bpf_map_lookup_elem(&stages, &depth);
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!sg || !st || size > sizeof(struct sample))
		return -1;
	pos &= STAGE_POS_MASK;
	*(__u64 *)(sg->buf + pos) = size;
	end = pos + STAGE_SUB_HDR + size;

	sg->busy = 1;
	asm volatile("" ::: "memory");
	committed = sg->used == pos;
	if (committed)
		sg->used = end;
	asm volatile("" ::: "memory");
	sg->busy = 0;
	if (!committed) {
		rb = bpf_map_lookup_elem(&rings, &cpu);
		if (!rb || bpf_ringbuf_output(rb, sg->buf + pos + STAGE_SUB_HDR, size, wakeup_flags(st, size)))
			return -1;
		return 0;
	}
	if (now || end >= stage_bytes)
		stage_flush(cpu, depth);
	return 0;
}

/*
 * What goes ahead of a sample in the CPU's ring: its thread's comm record
 * when needed, and its stacks. Returns nonzero if the ring is full; sets
 * *rbp and *stp to the ring and the CPU's state.
 */
static __always_inline int prelude(void *ctx, const struct probe_spec *spec, __u64 now, __u64 pid_tgid, __u32 cpu,
				   const int ctx_kind, __u32 depth, void **rbp, struct cpu_state **stp)
{
	__u32 zero = 0;
	struct cpu_state *st;
	void *rb;

	rb = bpf_map_lookup_elem(&rings, &cpu);
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!rb || !st || emit_comm(rb, st, now, pid_tgid, cpu))
		return -1;
	if ((spec->kstack || spec->ustack) && !use_stacks)
		return -1;
	/* What the CPU staged goes ahead of the stacks, as of the comm. */
	if (spec->kstack || spec->ustack)
		stage_flush(cpu, 0);
	if (spec->kstack && emit_stack(ctx, rb, st, now, pid_tgid, cpu, spec, 0, ctx_kind, depth))
		return -1;
	if (spec->ustack && emit_stack(ctx, rb, st, now, pid_tgid, cpu, spec, 1, ctx_kind, depth))
		return -1;
	*rbp = rb;
	*stp = st;
	return 0;
}

static __always_inline int record_at(void *ctx, const int ctx_kind, __u32 depth)
{
	int self;
	__u64 now, pid_tgid;
	__u32 key, cpu, size, pos, send_now;
	const struct probe_spec *spec;
	struct cpu_state *st = 0;
	struct sample *s = 0;
	struct stage *sg;
	__u64 *cnt;
	void *rb;

	/* Outside the window nothing is recorded; inside, no event is older than its opening. */
	if (!armed)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	self = wanted(pid_tgid);
	if (!self)
		return 0;
	if (fixed_spec != FIXED_SPEC_COOKIE) {
		key = FIXED_SPEC_COOKIE;
		spec = (const struct probe_spec *)&fixed_spec_data;
		/* Hide where spec points, so that its fields are loaded, not folded. */
		asm volatile("" : "+r"(spec));
	} else {
		key = (__u32)bpf_get_attach_cookie(ctx);
		spec = bpf_map_lookup_elem(&probe_specs, &key);
		if (!spec)
			return 0;
	}
	if (self == 2 && !(spec->flags & SPEC_KEEP_SELF))
		return 0;
	/*
	 * A switch from the recorder or the idle task: left out if it is to
	 * one of them too. Before the filter, the comm and the stacks: those
	 * switches cost no more than this.
	 */
	if (ctx_kind == CTX_TP && (spec->flags & SPEC_SELF_SWITCH) && selfish(pid_tgid)) {
		__u32 next = 0;

		if (!bpf_probe_read_kernel(&next, sizeof(next), (char *)ctx + (spec->next_tid_off & 0xfff)) &&
		    own_switch(next, spec->probe_id))
			return 0;
	}
	cpu = bpf_get_smp_processor_id();
	if (spec->npred) {
		if (!use_filters)
			goto lost;
		/*
		 * A filter needs the values first: fill the scratch sample,
		 * and send nothing, not even the comm or the stacks, unless
		 * it passes.
		 */
		s = bpf_map_lookup_elem(&sample_scratch, &depth);
		if (!s)
			return 0;
		fill(ctx, spec, s, 0, pid_tgid, cpu, MAX_ARGS, 1, ctx_kind, key, depth);
		if (!filter_pass(key, depth)) {
			key = spec->probe_id;
			cnt = bpf_map_lookup_elem(&filtered, &key);
			if (cnt)
				*cnt += 1;
			return 0;
		}
#ifdef BPFTAPE_RATE_LIMIT
		/* A rate limit counts only what the filter passed. */
		if (rate_rejects(spec, &key))
			return 0;
#endif
		/* The clock only for what is sent: a rejected event does not read it. */
		now = bpf_ktime_get_boot_ns();
		s->time = now;
		/* What the CPU staged goes first: its ring stays in time order. */
		stage_flush(cpu, 0);
		if (prelude(ctx, spec, now, pid_tgid, cpu, ctx_kind, depth, &rb, &st))
			goto lost;
		/*
		 * The class's prefix of the scratch sample: a copy into the
		 * ring. (This branch sends and returns: testing the sample
		 * again after a common part, clang tested the saved npred,
		 * which 6.1's verifier did not know agrees with it.)
		 */
		switch (spec->size_class) {
		case CLASS_ARGS0:
			size = CLASS_SIZE(0);
			break;
		case CLASS_ARGS1:
			size = CLASS_SIZE(1);
			break;
		case CLASS_ARGS2:
			size = CLASS_SIZE(2);
			break;
		case CLASS_ARGS6:
			size = CLASS_SIZE(6);
			break;
		case CLASS_ARGS12:
			size = CLASS_SIZE(12);
			break;
		default:
			size = sizeof(struct sample);
		}
		if (bpf_ringbuf_output(rb, s, size, wakeup_flags(st, size)))
			goto lost;
		return 0;
	}
#ifdef BPFTAPE_RATE_LIMIT
	if (rate_rejects(spec, &key))
		return 0;
#endif
	now = bpf_ktime_get_boot_ns();
	if (prelude(ctx, spec, now, pid_tgid, cpu, ctx_kind, depth, &rb, &st))
		goto lost;
	/* Decided before fill: spec is then not live after it (see stage_commit). */
	send_now = depth || spec->kstack || spec->ustack;
	sg = bpf_map_lookup_elem(&stages, &depth);
	if (!sg)
		goto lost;
	pos = sg->used & STAGE_POS_MASK;

	/*
	 * One fill per class, of a constant size: the verifier checks fill's
	 * writes against it.
	 */
#define STAGE_FILL(class, bytes, cap, with_strs)                                 \
	if (max_class < (class))                                                 \
		goto lost;                                                       \
	size = (bytes);                                                          \
	s = (struct sample *)(sg->buf + pos + STAGE_SUB_HDR);                    \
	fill(ctx, spec, s, now, pid_tgid, cpu, (cap), (with_strs), ctx_kind, key, depth); \
	break;

	switch (spec->size_class) {
	case CLASS_ARGS0:
		STAGE_FILL(CLASS_ARGS0, CLASS_SIZE(0), 0, 0)
	case CLASS_ARGS1:
		STAGE_FILL(CLASS_ARGS1, CLASS_SIZE(1), 1, 0)
	case CLASS_ARGS2:
		STAGE_FILL(CLASS_ARGS2, CLASS_SIZE(2), 2, 0)
	case CLASS_ARGS6:
		STAGE_FILL(CLASS_ARGS6, CLASS_SIZE(6), 6, 0)
	case CLASS_ARGS12:
		STAGE_FILL(CLASS_ARGS12, CLASS_SIZE(12), 12, 0)
	case CLASS_ARGS12_STR4:
		STAGE_FILL(CLASS_ARGS12_STR4, sizeof(struct sample), 12, 1)
	default:
		return 0;
	}
#undef STAGE_FILL
	if (stage_commit(cpu, depth, pos, size, send_now))
		goto lost;
	return 0;

lost:
	count_lost(cpu, spec->probe_id);
	return 0;
}

/*
 * Record one event at this CPU's next nesting depth (see SCRATCH_DEPTH). The
 * CPU state is looked up again at the end rather than kept live across
 * record_at, which the verifier would otherwise carry through every path.
 */
static __always_inline int record(void *ctx, const int ctx_kind)
{
	__u32 zero = 0, d;
	struct cpu_state *st;

	if (!armed)
		return 0;
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (!st)
		return 0;
	d = st->nest;
	if (d >= SCRATCH_DEPTH)
		return 0;
	st->nest = d + 1;
	record_at(ctx, ctx_kind, d);
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	if (st)
		st->nest = d;
	return 0;
}

SEC("uprobe")
int probe_uprobe(struct pt_regs *ctx)
{
	return record(ctx, CTX_REGS);
}

/*
 * The kprobes of a pattern (k:vfs_*) on kernels with kprobe_multi links
 * (5.18, CONFIG_FPROBE): one link for every function, each with the cookie
 * of its own spec. Only the attach type differs from probe_uprobe.
 */
SEC("kprobe.multi")
int probe_kprobe_multi(struct pt_regs *ctx)
{
	return record(ctx, CTX_REGS);
}

SEC("tracepoint")
int probe_tracepoint(void *ctx)
{
	return record(ctx, CTX_TP);
}

#ifdef BPFTAPE_RATE_LIMIT
/*
 * probe_uprobe and probe_tracepoint for an attachment of a rate-limited
 * spec, loaded as a copy with the spec fixed (bpf.RateLimitedCopies): an
 * event past the limit is rejected first (rate_rejects_early).
 */
SEC("uprobe")
int probe_uprobe_rl(struct pt_regs *ctx)
{
	if (rate_rejects_early())
		return 0;
	return record(ctx, CTX_REGS);
}

SEC("tracepoint")
int probe_tracepoint_rl(void *ctx)
{
	if (rate_rejects_early())
		return 0;
	return record(ctx, CTX_TP);
}
#endif

/*
 * profile:hz:N: a CPU-clock perf event per CPU runs it N times a second;
 * its context begins with the interrupted registers. Perf event links take
 * a cookie only from 5.15 and through BPF_LINK_CREATE, so each profile
 * probe gets a copy with its spec as constants (fixed_spec), on every
 * kernel. The idle task (pid 0) is left out, as BCC's profile does.
 */
SEC("perf_event")
int probe_perf_event(struct pt_regs *ctx)
{
	if (!(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return record(ctx, CTX_REGS);
}

/*
 * fentry and fexit: the loader gives each attachment a copy with its
 * function (AttachTo) and its spec as constants (fixed_spec), as a
 * tracing program's target is fixed when it is loaded.
 */
SEC("fentry")
int probe_fentry(void *ctx)
{
	return record(ctx, CTX_FUNC);
}

SEC("fexit")
int probe_fexit(void *ctx)
{
	return record(ctx, CTX_FUNC);
}

/*
 * Run by user space on each CPU (BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU) before it reads the rings: sends what the CPU
 * staged. Returns 1 if a recording program is running on the CPU (this
 * one interrupted it), whose record may still come.
 */
SEC("raw_tracepoint")
int flush_stage(void *ctx)
{
	__u32 zero = 0;
	struct cpu_state *st;

	stage_flush(bpf_get_smp_processor_id(), 0);
	st = bpf_map_lookup_elem(&cpu_state, &zero);
	return st && st->nest;
}

/*
 * sched_process_fork(parent, child), run by the parent: when following, a
 * child process (not a thread: its tgid is new) of a traced process is
 * traced too. A child that does not fit is counted in untracked.
 */
SEC("raw_tracepoint/sched_process_fork")
int track_fork(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32, child = 0;
	__u8 one = 1;

	if (!follow || !task_tgid_off || !bpf_map_lookup_elem(&traced, &parent))
		return 0;
	if (bpf_probe_read_kernel(&child, sizeof(child), (char *)ctx->args[1] + task_tgid_off))
		return 0;
	if (!child || child == parent)
		return 0;
	if (!bpf_map_update_elem(&traced, &child, &one, BPF_NOEXIST))
		__sync_fetch_and_add(&tracked, 1);
	else if (!bpf_map_lookup_elem(&traced, &child))
		__sync_fetch_and_add(&untracked, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
