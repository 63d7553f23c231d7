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

// TestErrorsOnly: the errors are logged, with the logger's values and
// names and the caller's line; info lines are not, at any verbosity.
func TestErrorsOnly(t *testing.T) {
	errBoom := errors.New("boom")
	for name, tc := range map[string]struct {
		log  func(l logr.Logger)
		want []string
	}{
		"an error": {func(l logr.Logger) {
			l.Error(errBoom, "failed", "k", 1)
		}, []string{`"msg"="failed" "error"="boom" "k"=1`}},
		"an info line": {func(l logr.Logger) {
			l.Info("progress", "k", 1)
		}, nil},
		"a verbose line": {func(l logr.Logger) {
			l.V(2).Info("detail")
		}, nil},
		"the logger's values and name": {func(l logr.Logger) {
			l.WithName("eviction").WithValues("domain", "ud-1").Error(errBoom, "failed")
		}, []string{`eviction: "msg"="failed" "error"="boom" "domain"="ud-1"`}},
		"an error at a verbosity": {func(l logr.Logger) {
			l.V(4).Error(errBoom, "failed")
		}, []string{`"msg"="failed" "error"="boom"`}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			l := udrain.ErrorsOnly(funcr.New(func(prefix, args string) {
				if prefix != "" {
					args = prefix + ": " + args
				}
				got = append(got, args)
			}, funcr.Options{LogCaller: funcr.All, Verbosity: 9}))
			tc.log(l)
			// The line logs on the line after the func's.
			_, line := runtime.FuncForPC(reflect.ValueOf(tc.log).Pointer()).FileLine(reflect.ValueOf(tc.log).Pointer())
			caller := fmt.Sprintf(`"caller"={"file"="errorsonly_test.go" "line"=%d} `, line+1)
			for i, g := range got {
				if !strings.Contains(g, caller) {
					t.Errorf("line %q: want the caller %s", g, caller)
				}
				got[i] = strings.Replace(g, caller, "", 1)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorsOnlyWithoutSink: a logger without a sink stays without; the
// logger given is not changed.
func TestErrorsOnlyWithoutSink(t *testing.T) {
	if l := udrain.ErrorsOnly(logr.Logger{}); l.GetSink() != nil {
		t.Error("a logger without a sink got one")
	}
	var got []string
	l := funcr.New(func(_, args string) { got = append(got, args) }, funcr.Options{})
	_ = udrain.ErrorsOnly(l)
	l.Info("still logged")
	if diff := cmp.Diff([]string{`"level"=0 "msg"="still logged"`}, got); diff != "" {
		t.Errorf("the logger given (-want +got):\n%s", diff)
	}
}
