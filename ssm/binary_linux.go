package ssm

import "syscall"

func init() {
	adviseRandom = func(data []byte) error { return syscall.Madvise(data, syscall.MADV_RANDOM) }
}
