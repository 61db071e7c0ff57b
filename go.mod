module github.com/gvr-go/gvr

go 1.25

require (
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
