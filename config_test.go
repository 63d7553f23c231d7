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
