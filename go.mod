module github.com/gvr-go/gvr

go 1.25
