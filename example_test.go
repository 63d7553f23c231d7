package udrain_test

import (
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/udrain/udrain"
	"github.com/udrain/udrain/eviction"
)

// Every package returns a *udrain.ConfigError for a setting that cannot
// work, before it has changed anything: one errors.As tells "fix the
// configuration" from "the cluster said no". Field names the Go setting
// (a command line maps it to its flag).
func ExampleConfigError() {
	_, err := eviction.New(fake.NewClientset(), eviction.Options{Concurrency: -1})
	var ce *udrain.ConfigError
	if errors.As(err, &ce) {
		fmt.Println("fix", ce.Field)
	}
	// Output:
	// fix eviction.Options.Concurrency
}

// A controller whose users set the Drainer's options in a custom
// resource's spec names them by the spec's fields, in errors and log
// lines alike.
func ExampleDescribeError() {
	specField := func(setting string) string {
		return map[string]string{"eviction.Options.Concurrency": "spec.concurrency"}[setting]
	}
	_, err := eviction.New(fake.NewClientset(), eviction.Options{Concurrency: -1})
	fmt.Println(udrain.DescribeError(fmt.Errorf("reconciling: %w", err), specField))
	// Output:
	// reconciling: invalid spec.concurrency: -1 is negative; use 0 for the default (32)
}
