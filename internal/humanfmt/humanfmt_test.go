package humanfmt

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Duration(0), "0ns"}, {Duration(512), "512ns"}, {Duration(1024), "1.02µs"}, {Duration(16.4e6), "16.4ms"},
		{Duration(2e9), "2s"}, {Duration(599e9), "599s"}, {Duration(725e9), "12m05s"}, {Duration(3700e9), "1h01m"},
		{Duration(-1500), "-1.5µs"},
		{Offset(0), "+0s"}, {Offset(250e6), "+250ms"}, {Offset(1.5e9), "+1.5s"}, {Offset(-3e6), "-3ms"},
		{Binary(512), "512"}, {Binary(1024), "1Ki"}, {Binary(3 << 20), "3Mi"}, {Binary(3 << 29), "1.5Gi"}, {Binary(1 << 63), "8Ei"},
		{SI(2500), "2500"}, {SI(-2500), "-2500"}, {SI(12500), "12.5k"}, {SI(-3e6), "-3M"},
		{Commas(0), "0"}, {Commas(999), "999"}, {Commas(1000), "1,000"}, {Commas(1041070), "1,041,070"},
		{Commas(18446744073709551615), "18,446,744,073,709,551,615"},
		{Plural(0, "process", "processes"), "0 processes"}, {Plural(1, "process", "processes"), "1 process"},
		{Plural(12345, "event came", "events came"), "12345 events came"},
		{Rate(1000), "1,000"}, {Rate(2.5), "2.5"}, {Rate(0.1), "0.1"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
