//go:build unix

package h1

import (
	"net"
	"syscall"
)

// peerOpen reports whether the server has not closed nc: a non-blocking
// peek finds no data and no end of stream. An idle HTTP connection has
// nothing to read, so anything else (an EOF, an error, stray bytes) means
// it must not carry another request.
func peerOpen(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && open
}
