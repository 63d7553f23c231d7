package udrain

import (
	"errors"
	"slices"
	"strings"

	"github.com/go-logr/logr"
)

// SettingKey is the key under which the module's packages log, beside a
// line's hint, the setting that changes what it reports (in
// ConfigError.Field's form), so that a caller's logger can name it as its
// users know it (NamingLogger).
const SettingKey = "setting"

// Describer is an error of the module that names settings in
// ConfigError.Field's form (*ConfigError, bootstrap's *WaitError):
// Describe is its message with each setting named by name.
type Describer interface {
	error
	Describe(name func(setting string) string) string
}

// DescribeError returns err's message with the settings named by name
// (a command line's flags, a custom resource's fields): the part of the
// message that the first Describer in err's chain wrote (its Error)
// becomes its Describe(name). Nothing else of the text changes; a nil
// name, or one that returns "", keeps a setting's Go name.
func DescribeError(err error, name func(setting string) string) string {
	msg := err.Error()
	if d, ok := errors.AsType[Describer](err); ok {
		msg = strings.Replace(msg, d.Error(), d.Describe(name), 1)
	}
	return msg
}

// NamingLogger returns logger with the settings its lines name by name:
// the value of each SettingKey, and the errors logged (DescribeError; the
// error logged still unwraps to the original). Messages and other values
// pass unchanged. A logger without a sink is returned as is.
func NamingLogger(logger logr.Logger, name func(setting string) string) logr.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	// The sink was initialised for logger: it only needs to skip the
	// frame namingSink adds.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logr.New(namingSink{LogSink: sink, name: name})
}

// describedError is an error described by name; it unwraps to the error.
type describedError struct {
	err  error
	name func(string) string
}

func (e *describedError) Error() string { return DescribeError(e.err, e.name) }
func (e *describedError) Unwrap() error { return e.err }

// namingSink is NamingLogger's sink.
type namingSink struct {
	logr.LogSink
	name func(string) string
}

// Init does nothing: the sink wrapped was initialised by its own logger.
func (s namingSink) Init(logr.RuntimeInfo) {}

// WithCallDepth passes the depth on, for helpers that log.
func (s namingSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return namingSink{cd.WithCallDepth(depth), s.name}
	}
	return s
}

func (s namingSink) Info(level int, msg string, kv ...any) {
	s.LogSink.Info(level, msg, s.values(kv)...)
}

func (s namingSink) Error(err error, msg string, kv ...any) {
	if err != nil {
		err = &describedError{err, s.name}
	}
	s.LogSink.Error(err, msg, s.values(kv)...)
}

func (s namingSink) WithValues(kv ...any) logr.LogSink {
	return namingSink{s.LogSink.WithValues(s.values(kv)...), s.name}
}

func (s namingSink) WithName(name string) logr.LogSink {
	return namingSink{s.LogSink.WithName(name), s.name}
}

// values names the value of a SettingKey, and describes the errors,
// among key/value pairs.
func (s namingSink) values(kv []any) []any {
	out := slices.Clone(kv)
	for i, v := range out {
		switch v := v.(type) {
		case string:
			if i%2 == 1 && out[i-1] == SettingKey {
				out[i] = NameSetting(s.name, v)
			}
		case error:
			out[i] = &describedError{v, s.name}
		}
	}
	return out
}
