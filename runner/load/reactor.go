package load

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A reactor reads the client's connections on one OS thread of its own, blocked in epoll_wait:
// when bytes arrive the kernel wakes that thread directly, it reads them and stamps the read with
// the monotonic clock before anything else happens (no goroutine hand-off, no JSON parsing in
// between). Each wake-up first reads every ready connection and stamps each read, then parses
// what it read, so a busy batch does not delay the stamps of the later connections in it.
//
// Connections are plain non-blocking sockets that Go's own poller never sees, so a byte wakes
// one thread, not two. The request goroutine writes the request and waits for the reactor to
// close the stream's done channel; everything the reactor does to a connection happens under
// that connection's mutex.

const (
	// reactorRead is the most one read takes from one connection.
	reactorRead = 64 << 10
	// reactorArena holds the reads of one wake-up before they are parsed.
	reactorArena = 1 << 20
	// reactorEvents is the most epoll events taken per wake-up.
	reactorEvents = 256
)

type reactor struct {
	epfd   int
	wakefd int // eventfd: close wakes the loop

	mu     sync.Mutex
	conns  map[int32]*conn
	quit   bool
	exited chan struct{}
}

type readResult struct {
	c    *conn
	data []byte
	now  time.Time
	err  error
	eof  bool
}

func newReactor() (*reactor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, err
	}
	r := &reactor{epfd: epfd, wakefd: wakefd, conns: map[int32]*conn{}, exited: make(chan struct{})}
	go r.run()
	return r, nil
}

// add registers c (level-triggered: a connection with unread bytes is reported again).
func (r *reactor) add(c *conn) error {
	r.mu.Lock()
	if r.quit {
		r.mu.Unlock()
		return errors.New("reactor stopped")
	}
	r.conns[int32(c.fd)] = c
	r.mu.Unlock()
	c.mu.Lock()
	c.registered = true
	c.mu.Unlock()
	err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd)})
	if err != nil {
		c.mu.Lock()
		c.registered = false
		c.mu.Unlock()
		r.mu.Lock()
		delete(r.conns, int32(c.fd))
		r.mu.Unlock()
	}
	return err
}

// remove deregisters c; its caller holds c.mu and has not closed c.fd yet.
func (r *reactor) remove(c *conn) {
	if !c.registered {
		return
	}
	c.registered = false
	unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	r.mu.Lock()
	if r.conns[int32(c.fd)] == c {
		delete(r.conns, int32(c.fd))
	}
	r.mu.Unlock()
}

// close stops the loop and waits for it; connections must be closed first.
func (r *reactor) close() {
	r.mu.Lock()
	r.quit = true
	r.mu.Unlock()
	var one = [8]byte{1}
	unix.Write(r.wakefd, one[:])
	<-r.exited
	unix.Close(r.epfd)
	unix.Close(r.wakefd)
}

func (r *reactor) run() {
	runtime.LockOSThread()
	defer close(r.exited)
	events := make([]unix.EpollEvent, reactorEvents)
	arena := make([]byte, reactorArena)
	batch := make([]readResult, 0, reactorEvents)
	for {
		n, err := unix.EpollWait(r.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// epoll_wait fails only on a bad descriptor: nothing more can be read.
			r.failAll(err)
			return
		}
		off := 0
		batch = batch[:0]
		for _, ev := range events[:n] {
			if int(ev.Fd) == r.wakefd {
				r.mu.Lock()
				quit := r.quit
				r.mu.Unlock()
				if quit {
					return
				}
				continue
			}
			if off+reactorRead > len(arena) {
				break // the rest stay ready and come back on the next wake-up
			}
			r.mu.Lock()
			c := r.conns[ev.Fd]
			r.mu.Unlock()
			if c == nil {
				continue
			}
			c.mu.Lock()
			if c.closed || !c.registered {
				c.mu.Unlock()
				continue
			}
			m, rerr := unix.Read(c.fd, arena[off:off+reactorRead])
			now := time.Now()
			c.mu.Unlock()
			switch {
			case m > 0:
				batch = append(batch, readResult{c: c, data: arena[off : off+m], now: now})
				off += m
			case rerr == nil:
				batch = append(batch, readResult{c: c, now: now, eof: true})
			case errors.Is(rerr, unix.EAGAIN) || errors.Is(rerr, unix.EINTR):
			default:
				batch = append(batch, readResult{c: c, now: now, eof: true, err: rerr})
			}
		}
		for i := range batch {
			r.deliver(&batch[i])
			batch[i] = readResult{}
		}
	}
}

// deliver hands one read to its connection's stream.
func (r *reactor) deliver(rr *readResult) {
	c := rr.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	st := c.st
	if st == nil {
		// Bytes or an end on an idle connection: it cannot carry another request.
		c.dead = true
		r.remove(c)
		return
	}
	if rr.eof {
		st.eof(rr.now, rr.err)
	} else {
		st.feed(rr.data, rr.now)
	}
	if st.closed {
		c.st = nil
		if !st.reusable {
			c.dead = true
			r.remove(c)
		}
		st.notify()
	}
}

// failAll ends every active stream (the reactor cannot continue).
func (r *reactor) failAll(err error) {
	r.mu.Lock()
	r.quit = true
	conns := make([]*conn, 0, len(r.conns))
	for _, c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	now := time.Now()
	for _, c := range conns {
		c.mu.Lock()
		if st := c.st; st != nil {
			st.abort(now, ClassConnection, "reactor: epoll_wait: %v", err)
			c.st = nil
		}
		c.dead = true
		r.remove(c)
		c.mu.Unlock()
	}
}
