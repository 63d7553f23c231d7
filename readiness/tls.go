package readiness

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/udrain/udrain"
)

// TLSOptions are the settings of members served over https whose
// certificates a private CA signs, or that ask for a client certificate,
// as they are usually mounted from a Secret. [TLSOptions.Config] loads them
// for [WithTLSConfig].
type TLSOptions struct {
	// CAFile is a PEM bundle of the CAs that may sign the members'
	// certificates; empty means the system roots.
	CAFile string
	// ServerName is the name every member's certificate must be valid for;
	// empty means each member's own host name.
	ServerName string
	// ClientCertFile and ClientKeyFile are a PEM client certificate and its
	// key, for members that require one. Set both or neither.
	ClientCertFile string
	ClientKeyFile  string
}

// Config reads the files of o and returns the TLS configuration to pass to
// [WithTLSConfig]. A file that cannot be read or holds no PEM is a
// *udrain.ConfigError naming the field, e.g. "readiness.TLSOptions.CAFile".
func (o TLSOptions) Config() (*tls.Config, error) {
	c := &tls.Config{ServerName: o.ServerName, MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, tlsError("CAFile", "cannot read %s: %v", o.CAFile, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, tlsError("CAFile", "%s holds no PEM certificate: give a PEM bundle (-----BEGIN CERTIFICATE-----)", o.CAFile)
		}
	}
	if (o.ClientCertFile == "") != (o.ClientKeyFile == "") {
		return nil, &udrain.ConfigError{Field: "readiness.TLSOptions.ClientCertFile", Problem: "set it and the client key, or neither", See: []string{"readiness.TLSOptions.ClientKeyFile"}}
	}
	if o.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCertFile, o.ClientKeyFile)
		if err != nil {
			return nil, tlsError("ClientCertFile", "cannot load the client certificate %s with key %s: %v", o.ClientCertFile, o.ClientKeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func tlsError(field, format string, args ...any) error {
	return &udrain.ConfigError{Field: "readiness.TLSOptions." + field, Problem: fmt.Sprintf(format, args...)}
}
