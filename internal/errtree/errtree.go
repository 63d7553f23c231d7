// Package errtree finds an error of a type, with a property, anywhere in
// an error's tree: errors.As stops at the first error of the type, which
// is not the one wanted when a tree holds two (a *eviction.DomainError
// unwraps to its cause and to the budget that blocked it, both
// *eviction.RetryError).
package errtree

// Find returns the first error in err's tree, in the order errors.As
// walks it (depth first, err itself first), that is a T for which match
// reports true.
func Find[T error](err error, match func(T) bool) (T, bool) {
	if err == nil {
		var zero T
		return zero, false
	}
	if t, ok := err.(T); ok && match(t) {
		return t, true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return Find(u.Unwrap(), match)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if t, ok := Find(e, match); ok {
				return t, true
			}
		}
	}
	var zero T
	return zero, false
}
