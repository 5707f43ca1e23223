//go:build !linux

package hugepage

func prepare(int) {}
