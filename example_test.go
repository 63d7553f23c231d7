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
