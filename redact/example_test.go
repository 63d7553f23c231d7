package redact_test

import (
	"errors"
	"fmt"

	"github.com/udrain/udrain/redact"
)

func ExampleURL() {
	fmt.Println(redact.URL("https://admin:hunter22@gpustack.svc:443/healthz?verbose&token=abc#access_token=def"))
	// A password with an unescaped '/': net/url would read host "admin:pa".
	fmt.Println(redact.URL("http://admin:pa/ss@gpustack.svc/healthz"))
	// Output:
	// https://xxxxx@gpustack.svc:443/healthz?verbose&token=xxxxx#xxxxx
	// http://xxxxx@gpustack.svc/healthz
}

func ExampleSecrets() {
	const target = "http://admin:hunter22@gpustack.svc/healthz"
	var secrets redact.Secrets
	secrets.AddURL(target)
	// An error that quotes part of the URL in its own words.
	err := errors.New(`server rejected user "admin" with password "hunter22"`)
	fmt.Println(secrets.Error(err))
	// Output:
	// server rejected user "xxxxx" with password "xxxxx"
}
