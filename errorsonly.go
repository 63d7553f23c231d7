package udrain

import "github.com/go-logr/logr"

// ErrorsOnly returns logger with its errors kept and its info lines, at
// every verbosity, dropped: for a caller that shows a call's progress its
// own way (from the events of package eviction, say) and would read the
// same things twice in the module's info lines, but still wants the errors
// logged. The logger's values and names pass on to the errors; the
// caller's line of each error is the one logger reports. A logger without
// a sink is returned as is.
func ErrorsOnly(logger logr.Logger) logr.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	return logr.New(errorsOnlySink{sink})
}

// errorsOnlySink is ErrorsOnly's sink. Its Error is the wrapped sink's
// own.
type errorsOnlySink struct{ logr.LogSink }

// Init does nothing: the sink wrapped was initialised by its own logger.
func (errorsOnlySink) Init(logr.RuntimeInfo) {}

func (errorsOnlySink) Enabled(int) bool         { return false }
func (errorsOnlySink) Info(int, string, ...any) {}

func (s errorsOnlySink) WithValues(kv ...any) logr.LogSink {
	return errorsOnlySink{s.LogSink.WithValues(kv...)}
}

func (s errorsOnlySink) WithName(name string) logr.LogSink {
	return errorsOnlySink{s.LogSink.WithName(name)}
}
