package eviction

import "github.com/udrain/udrain/internal/errtree"

// asReason is errors.As for the error of target's group with Reason r,
// wherever it is in err's tree.
func asReason[T interface {
	*ClusterError | *PermissionError | *RetryError
	error
}](err error, target *T, r ErrorReason) bool {
	t, ok := errtree.Find(err, func(e T) bool { return reasonOf(e) == r })
	if ok {
		*target = t
	}
	return ok
}

// reasonOf is the Reason of an error of a group, else "".
func reasonOf(err error) ErrorReason {
	switch e := err.(type) {
	case *ClusterError:
		return e.Reason
	case *PermissionError:
		return e.Reason
	case *RetryError:
		return e.Reason
	}
	return ""
}
