package udrain_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/udrain/udrain"
)

func TestConfigErrorNamesTheFieldAndTheFix(t *testing.T) {
	err := fmt.Errorf("starting: %w", &udrain.ConfigError{Field: "eviction.Options.Concurrency", Problem: "-1 is negative; use 0 for the default (32)"})
	var cfg *udrain.ConfigError
	if !errors.As(err, &cfg) {
		t.Fatalf("errors.As(%v) found no *ConfigError", err)
	}
	if got, want := cfg.Error(), "invalid eviction.Options.Concurrency: -1 is negative; use 0 for the default (32)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// Describe names Field and See as the caller's users know them; Error
// keeps their Go names.
func TestConfigErrorDescribe(t *testing.T) {
	flags := map[string]string{"readiness.Options.MemberTimeout": "--member-timeout", "readiness.Options.Timeout": "--check-timeout"}
	byFlag := func(s string) string { return flags[s] }
	for _, tc := range []struct {
		name      string
		err       *udrain.ConfigError
		namer     func(string) string
		want      string
		wantError string
	}{{
		name:      "no other setting",
		err:       &udrain.ConfigError{Field: "readiness.Options.MemberTimeout", Problem: "-1s is negative"},
		namer:     byFlag,
		want:      "invalid --member-timeout: -1s is negative",
		wantError: "invalid readiness.Options.MemberTimeout: -1s is negative",
	}, {
		name:      "another setting involved",
		err:       &udrain.ConfigError{Field: "readiness.Options.MemberTimeout", Problem: "10s is longer than the timeout of a round (5s)", See: []string{"readiness.Options.Timeout"}},
		namer:     byFlag,
		want:      "invalid --member-timeout: 10s is longer than the timeout of a round (5s) (see --check-timeout)",
		wantError: "invalid readiness.Options.MemberTimeout: 10s is longer than the timeout of a round (5s) (see readiness.Options.Timeout)",
	}, {
		name:      "a setting the caller has no name for keeps its Go name",
		err:       &udrain.ConfigError{Field: "readiness.Options.TTL", Problem: "negative", See: []string{"readiness.Options.Timeout", "readiness.Options.Workers"}},
		namer:     byFlag,
		want:      "invalid readiness.Options.TTL: negative (see --check-timeout, readiness.Options.Workers)",
		wantError: "invalid readiness.Options.TTL: negative (see readiness.Options.Timeout, readiness.Options.Workers)",
	}, {
		name:      "no namer",
		err:       &udrain.ConfigError{Field: "readiness.Options.TTL", Problem: "negative"},
		want:      "invalid readiness.Options.TTL: negative",
		wantError: "invalid readiness.Options.TTL: negative",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Describe(tc.namer); got != tc.want {
				t.Errorf("Describe = %q, want %q", got, tc.want)
			}
			if got := tc.err.Error(); got != tc.wantError {
				t.Errorf("Error = %q, want %q", got, tc.wantError)
			}
		})
	}
}
