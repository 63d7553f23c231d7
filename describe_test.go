package udrain_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"

	"github.com/udrain/udrain"
)

// flags names two settings as a command line would.
func flags(setting string) string {
	return map[string]string{"pkg.Options.Timeout": "--timeout", "pkg.Options.Limit": "--limit"}[setting]
}

var errTimeout = &udrain.ConfigError{Field: "pkg.Options.Timeout", Problem: "-1s is negative", See: []string{"pkg.Options.Limit", "pkg.Options.Other"}}

func TestDescribeError(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		name func(string) string
		want string
	}{
		"a ConfigError": {errTimeout, flags, "invalid --timeout: -1s is negative (see --limit, pkg.Options.Other)"},
		"wrapped":       {fmt.Errorf("starting: %w; nothing done", errTimeout), flags, "starting: invalid --timeout: -1s is negative (see --limit, pkg.Options.Other); nothing done"},
		"no names":      {fmt.Errorf("starting: %w", errTimeout), nil, "starting: invalid pkg.Options.Timeout: -1s is negative (see pkg.Options.Limit, pkg.Options.Other)"},
		"no Describer":  {errors.New("pkg.Options.Timeout: -1s"), flags, "pkg.Options.Timeout: -1s"},
		"the first of two": {errors.Join(errTimeout, &udrain.ConfigError{Field: "pkg.Options.Limit", Problem: "0"}), flags,
			"invalid --timeout: -1s is negative (see --limit, pkg.Options.Other)\ninvalid pkg.Options.Limit: 0"},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, udrain.DescribeError(tc.err, tc.name)); diff != "" {
				t.Errorf("DescribeError (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNamingLogger: the value of a "setting" key and the errors are named
// as the caller names settings, in a line's values, its error and the
// logger's own values; the message, the other values and the caller's
// line are untouched.
func TestNamingLogger(t *testing.T) {
	for name, tc := range map[string]struct {
		log  func(l logr.Logger)
		want string
	}{
		"a setting beside a hint": {func(l logr.Logger) {
			l.Info("pkg.Options.Timeout is short", "hint", "raise it", udrain.SettingKey, "pkg.Options.Timeout", "other", "pkg.Options.Limit")
		}, `"msg"="pkg.Options.Timeout is short" "hint"="raise it" "setting"="--timeout" "other"="pkg.Options.Limit"`},
		"a setting no flag sets": {func(l logr.Logger) {
			l.Info("m", udrain.SettingKey, "pkg.Options.Other")
		}, `"msg"="m" "setting"="pkg.Options.Other"`},
		"the key, not a value": {func(l logr.Logger) {
			l.Info("m", "k", udrain.SettingKey, "pkg.Options.Timeout", 1)
		}, `"msg"="m" "k"="setting" "pkg.Options.Timeout"=1`},
		"an error logged": {func(l logr.Logger) {
			l.Error(fmt.Errorf("starting: %w", errTimeout), "failed")
		}, `"msg"="failed" "error"="starting: invalid --timeout: -1s is negative (see --limit, pkg.Options.Other)"`},
		"an error among the values": {func(l logr.Logger) {
			l.Info("m", "err", errTimeout)
		}, `"msg"="m" "err"="invalid --timeout: -1s is negative (see --limit, pkg.Options.Other)"`},
		"the logger's values and name": {func(l logr.Logger) {
			l.WithName("bootstrap").WithValues(udrain.SettingKey, "pkg.Options.Limit").Info("m")
		}, `bootstrap: "msg"="m" "setting"="--limit"`},
		"at a depth": {func(l logr.Logger) {
			l.WithCallDepth(0).Info("m")
		}, `"msg"="m"`},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			l := udrain.NamingLogger(funcr.New(func(prefix, args string) {
				if prefix != "" {
					args = prefix + ": " + args
				}
				got = append(got, args)
			}, funcr.Options{LogCaller: funcr.All}), flags)
			tc.log(l)
			if len(got) != 1 {
				t.Fatalf("%d lines logged, want 1: %q", len(got), got)
			}
			// The line logs on the line after the func's.
			_, line := runtime.FuncForPC(reflect.ValueOf(tc.log).Pointer()).FileLine(reflect.ValueOf(tc.log).Pointer())
			caller := fmt.Sprintf(`"caller"={"file"="describe_test.go" "line"=%d} `, line+1)
			if !strings.Contains(got[0], caller) {
				t.Errorf("line %q: want the caller %s", got[0], caller)
			}
			if diff := cmp.Diff(tc.want, strings.Replace(strings.Replace(got[0], caller, "", 1), `"level"=0 `, "", 1)); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNamingLoggerErrorUnwraps: the error a sink receives still unwraps
// to what was logged; a logger without a sink stays without.
func TestNamingLoggerErrorUnwraps(t *testing.T) {
	var got error
	udrain.NamingLogger(logr.New(&errorSink{got: &got}), flags).Error(fmt.Errorf("x: %w", errTimeout), "failed")
	var ce *udrain.ConfigError
	if !errors.As(got, &ce) || ce != errTimeout {
		t.Errorf("the error logged is %v (%T), want one that unwraps to the ConfigError", got, got)
	}
	if l := udrain.NamingLogger(logr.Logger{}, flags); l.GetSink() != nil {
		t.Error("a logger without a sink got one")
	}
}

type errorSink struct {
	logr.LogSink
	got *error
}

func (s *errorSink) Init(logr.RuntimeInfo)               {}
func (s *errorSink) Error(err error, _ string, _ ...any) { *s.got = err }
