package topology

// Select returns the domains a call that takes a list of domains works on:
// names itself when each is a domain of the layout (else the
// *UnknownDomainError of the first that is not), or every domain's name
// in natural order when names is empty.
func (l *Layout) Select(names []string) ([]string, error) {
	for _, name := range names {
		if _, err := l.Domain(name); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return l.Names(), nil
	}
	return names, nil
}
