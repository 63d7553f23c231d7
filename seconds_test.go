package udrain

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSecondsJSON(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		json string
	}{
		{0, `0`},
		{1500 * time.Millisecond, `1.5`},
		{90 * time.Minute, `5400`},
		{90*time.Minute + time.Nanosecond, `5400.000000001`},
		{1500 * time.Nanosecond, `0.0000015`},
		{time.Nanosecond, `0.000000001`},
		// Read back by truncation, as before Seconds, these two lost a
		// nanosecond (999.998µs, 1ms).
		{999999 * time.Nanosecond, `0.000999999`},
		{1000001 * time.Nanosecond, `0.001000001`},
		{-2500 * time.Microsecond, `-0.0025`},
		{-time.Hour, `-3600`},
	} {
		b, err := json.Marshal(Seconds(tc.d))
		if err != nil {
			t.Fatalf("Marshal(%v): %v", tc.d, err)
		}
		if diff := cmp.Diff(tc.json, string(b)); diff != "" {
			t.Errorf("Marshal(%v) (-want +got):\n%s", tc.d, diff)
		}
		var back Seconds
		if err := json.Unmarshal([]byte(tc.json), &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tc.json, err)
		}
		if diff := cmp.Diff(tc.d, back.Duration()); diff != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tc.json, diff)
		}
	}
}

func TestSecondsUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		json string
		want time.Duration
		err  string
	}{
		{`1e3`, 1000 * time.Second, ""},
		{`0.0000000004`, 0, ""},
		{`0.0000000006`, time.Nanosecond, ""},
		{`-0`, 0, ""},
		// null leaves the value as it was (7s here).
		{`null`, 7 * time.Second, ""},
		{`"1.5"`, 7 * time.Second, "udrain.Seconds: "},
		{`true`, 7 * time.Second, "udrain.Seconds: "},
		{`1e10`, 7 * time.Second, "out of a time.Duration's range"},
		{`-1e10`, 7 * time.Second, "out of a time.Duration's range"},
		{`9223372036.854775807`, 7 * time.Second, "out of a time.Duration's range"},
		{`9223372036`, 9223372036 * time.Second, ""},
	} {
		s := Seconds(7 * time.Second)
		err := json.Unmarshal([]byte(tc.json), &s)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Unmarshal(%s): error %v, want %q", tc.json, err, tc.err)
		}
		if diff := cmp.Diff(tc.want, s.Duration()); diff != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tc.json, diff)
		}
	}
}

func TestSecondsString(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 1500 * time.Millisecond: "1.5s", 90 * time.Minute: "1h30m0s", -1500 * time.Nanosecond: "-1.5µs"} {
		if got := Seconds(d).String(); got != want {
			t.Errorf("Seconds(%d).String() = %q, want %q", int64(d), got, want)
		}
	}
}
