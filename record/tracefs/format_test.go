package tracefs

import (
	"reflect"
	"strings"
	"testing"
)

// vhostNetTxEnd is the format of the vhost_net:vhost_net_tx_end tracepoint
// from the "Kernel and Userspace Tracing Using BCC" example, as the format
// file lays it out.
const vhostNetTxEnd = `name: vhost_net_tx_end
ID: 1958
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int sent_pkts;	offset:8;	size:4;	signed:1;
	field:int total_len;	offset:12;	size:4;	signed:1;

print fmt: "sent_pkts=%d, total_len=%d", REC->sent_pkts, REC->total_len
`

// vhostNetTxEndPasted is the same format as the article quotes it: flattened
// onto one line by the web page, then the fields and a curly-quoted print fmt.
const vhostNetTxEndPasted = "name: vhost_net_tx_end ID: 1958 format: field:unsigned short common_type; offset:0; size:2; signed:0; field:unsigned char common_flags; offset:2; size:1; signed:0; field:unsigned char common_preempt_count; offset:3; size:1; signed:0; field:int common_pid; offset:4; size:4; signed:1;\n\n" +
	"  field:int sent_pkts;    offset:8;   size:4; signed:1;\n" +
	"  field:int total_len;    offset:12;  size:4; signed:1;\n\n\n" +
	"print fmt: \u201csent_pkts=%d, total_len=%d\u201d, REC->sent_pkts, REC->total_len \u201c`\n"

func TestParseFormatGolden(t *testing.T) {
	vhost := &Format{Event: "vhost_net_tx_end", ID: 1958, Fields: []Field{
		{Name: "sent_pkts", CType: "int", Offset: 8, Size: 4, Signed: true, Kind: Int},
		{Name: "total_len", CType: "int", Offset: 12, Size: 4, Signed: true, Kind: Int},
	}}
	tests := []struct {
		name string
		text string
		want *Format
	}{
		{"vhost_net_tx_end", vhostNetTxEnd, vhost},
		{"vhost_net_tx_end pasted", vhostNetTxEndPasted, vhost},
		{"kinds", `name: kinds
ID: 7
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:const char * filename;	offset:8;	size:8;	signed:0;
	field:void *ptr;	offset:16;	size:8;	signed:1;
	field:char comm[16];	offset:24;	size:16;	signed:0;
	field:char old_comm[TASK_COMM_LEN];	offset:40;	size:16;	signed:1;
	field:__data_loc char[] name;	offset:56;	size:4;	signed:0;
	field:__data_loc string str;	offset:60;	size:4;	signed:0;
	field:__data_loc u8[] buf;	offset:64;	size:4;	signed:0;
	field:__rel_loc char[] rel;	offset:68;	size:4;	signed:0;
	field:u8 saddr[4];	offset:72;	size:4;	signed:0;
	field:struct in6_addr daddr;	offset:76;	size:16;	signed:0;
	field:struct tiny s;	offset:92;	size:4;	signed:0;
	field:bool ok;	offset:96;	size:1;	signed:0;
	field:short s16;	offset:98;	size:2;	signed:1;
	field:unsigned long long u64v;	offset:104;	size:8;	signed:0;
	field:__int128 big;	offset:112;	size:16;	signed:1;
	field:char buf2[];	offset:128;	size:0;	signed:0;
	field:char mismatch[4];	offset:128;	size:8;	signed:0;

print fmt: "field:not_a_field; offset:0; size:1;", REC->filename
`, &Format{Event: "kinds", ID: 7, Fields: []Field{
			{Name: "filename", CType: "const char *", Offset: 8, Size: 8, Kind: Int},
			{Name: "ptr", CType: "void *", Offset: 16, Size: 8, Kind: Int},
			{Name: "comm", CType: "char[16]", Offset: 24, Size: 16, Kind: CharArray},
			{Name: "old_comm", CType: "char[TASK_COMM_LEN]", Offset: 40, Size: 16, Signed: true, Kind: CharArray},
			{Name: "name", CType: "__data_loc char[]", Offset: 56, Size: 4, Kind: DataLoc},
			{Name: "str", CType: "__data_loc string", Offset: 60, Size: 4, Kind: DataLoc},
			{Name: "buf", CType: "__data_loc u8[]", Offset: 64, Size: 4, Kind: Other},
			{Name: "rel", CType: "__rel_loc char[]", Offset: 68, Size: 4, Kind: Other},
			{Name: "saddr", CType: "u8[4]", Offset: 72, Size: 4, Kind: Other},
			{Name: "daddr", CType: "struct in6_addr", Offset: 76, Size: 16, Kind: Other},
			{Name: "s", CType: "struct tiny", Offset: 92, Size: 4, Kind: Other},
			{Name: "ok", CType: "bool", Offset: 96, Size: 1, Kind: Int},
			{Name: "s16", CType: "short", Offset: 98, Size: 2, Signed: true, Kind: Int},
			{Name: "u64v", CType: "unsigned long long", Offset: 104, Size: 8, Kind: Int},
			{Name: "big", CType: "__int128", Offset: 112, Size: 16, Signed: true, Kind: Other},
			{Name: "buf2", CType: "char[]", Offset: 128, Size: 0, Kind: Other},
			{Name: "mismatch", CType: "char[4]", Offset: 128, Size: 8, Kind: Other},
		}}},
		{"old kernel without signed", "name: old\nID: 3\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n\n\tfield:long ret;\toffset:8;\tsize:8;\n\nprint fmt: \"%ld\", REC->ret\n",
			&Format{Event: "old", ID: 3, Fields: []Field{{Name: "ret", CType: "long", Offset: 8, Size: 8, Kind: Int}}}},
		{"no fields", "name: empty\nID: 4\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\nprint fmt: \"\"\n",
			&Format{Event: "empty", ID: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFormat(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseFormat:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestFormatEnd: a record ends where its last field does, as the kernel
// counts it when it attaches a program that loads from the record.
func TestFormatEnd(t *testing.T) {
	for _, tt := range []struct {
		text string
		want int
	}{
		{vhostNetTxEnd, 16},
		{"name: e\nID: 4\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\nprint fmt: \"\"\n", 8},
		{"name: x\nID: 5\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n\nprint fmt: \"\"\n", 24},
	} {
		f, err := ParseFormat(tt.text)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.End(); got != tt.want {
			t.Errorf("%s: End() = %d, want %d", f.Event, got, tt.want)
		}
	}
}

func TestParseFormatErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", `no "name:"`},
		{"no id", "name: x\nformat:\n", `no "ID:"`},
		{"bad id", "name: x\nID: -1\n", `bad ID "-1"`},
		{"missing size", "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:8;\n", "missing offset or size"},
		{"bad offset", "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:eight;\tsize:4;\n", `bad offset "eight"`},
		{"no name", "name: x\nID: 1\nformat:\n\tfield:int ;\toffset:8;\tsize:4;\n", "no type"},
		{"unbalanced", "name: x\nID: 1\nformat:\n\tfield:char a];\toffset:8;\tsize:4;\n", "unbalanced"},
		{"only type", "name: x\nID: 1\nformat:\n\tfield:*;\toffset:8;\tsize:4;\n", "no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFormat(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseFormat error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func FuzzParseFormat(f *testing.F) {
	f.Add(vhostNetTxEnd)
	f.Add(vhostNetTxEndPasted)
	f.Add("name: x ID: 1 field:char a[; offset:1; size:2;")
	f.Fuzz(func(t *testing.T, text string) {
		fm, err := ParseFormat(text)
		if err != nil {
			return
		}
		for _, fl := range fm.Fields {
			if fl.Name == "" || fl.CType == "" || fl.Offset < 0 || fl.Size < 0 {
				t.Errorf("bad field %+v", fl)
			}
		}
	})
}
