package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A short run of the harness: it must produce a parsable JSON line and a
// table. The figures themselves are not checked here; they are the output.
func TestRunShortOutage(t *testing.T) {
	c := config{outage: 600 * time.Millisecond, initializing: 400 * time.Millisecond, clients: 2, stagger: 100 * time.Millisecond, loopSleep: 100 * time.Millisecond, grace: 10 * time.Second}
	var out bytes.Buffer
	if err := run(context.Background(), c, &out, "go run ./hack/bench/bootstrap-outage -outage 600ms"); err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	var r report
	if err := json.Unmarshal([]byte(first), &r); err != nil {
		t.Fatalf("first line %q is not the JSON report: %v", first, err)
	}
	for name, s := range map[string]summary{"helper": r.Helper, "loop": r.Loop} {
		// Every client starts during the outage, so each made at least one
		// failed request then.
		if s.ClientsThatSucceeded != 2 || s.RequestsTotal < 2 || s.NoticeMaxMS < s.NoticeMedianMS {
			t.Errorf("%s summary %+v: want 2 clients, at least 2 requests during the outage, max >= median", name, s)
		}
	}
	// 400ms of initialising, loops asking every 100ms: some 503s.
	if r.Served503 < 2 {
		t.Errorf("the initialising server answered 503 %d times, want some", r.Served503)
	}
	if r.NoticeRatio <= 0 || r.RequestsRatio <= 0 || r.Command == "" {
		t.Errorf("report %+v lacks ratios or the command", r)
	}
	for _, want := range []string{"until curl -sf; sleep 0.1", "bootstrap.WaitForServer", "reproduce: go run ./hack/bench/bootstrap-outage"} {
		if !strings.Contains(rest, want) {
			t.Errorf("table lacks %q:\n%s", want, rest)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := config{outage: 30 * time.Second, clients: 1, stagger: 5 * time.Second, loopSleep: 5 * time.Second}
	tests := []struct {
		name   string
		change func(*config)
		want   string
	}{
		{"defaults", func(*config) {}, ""},
		{"no outage", func(c *config) { c.outage = 0 }, "-outage must be positive"},
		{"initializing too long", func(c *config) { c.initializing = time.Minute }, "-initializing must be between"},
		{"no clients", func(c *config) { c.clients = 0 }, "-clients must be at least 1"},
		{"stagger past the outage", func(c *config) { c.stagger = time.Minute }, "-stagger must be"},
		{"no sleep", func(c *config) { c.loopSleep = 0 }, "-loop-sleep must be positive"},
		{"negative cap", func(c *config) { c.helperCap = -time.Second }, "-cap must not be negative"},
	}
	for _, tt := range tests {
		c := good
		tt.change(&c)
		err := c.validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
