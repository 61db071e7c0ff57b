//go:build cuda

package runtime

import (
	"errors"
	"fmt"
	"time"

	"gorgonia.org/cu"
)

// Stream is a CUDA stream. Streams are made blocking: work on the default
// stream waits for them, as Download does.
type Stream struct {
	dev    *Device
	s      cu.Stream
	closed bool
}

// NewStream makes a stream.
func (d *Device) NewStream() (*Stream, error) {
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()
	s, err := cu.MakeStream(cu.DefaultStream)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: NewStream on %v: %w", d, driverErr("cuStreamCreate", err))
	}
	return &Stream{dev: d, s: s}, nil
}

// Device is the device s belongs to.
func (s *Stream) Device() *Device { return s.dev }

// Closed reports whether Close was called on s (false for the default
// stream, nil).
func (s *Stream) Closed() bool { return s != nil && s.closed }

// check reports whether s can queue work for device d. A nil Stream is the
// default stream of d.
func (s *Stream) check(d *Device) error {
	switch {
	case s == nil:
		return nil
	case s.closed:
		return errors.New("gvr/runtime: stream used after Close")
	}
	return sameDevice(d, s.dev, "the stream")
}

func (s *Stream) handle() cu.Stream {
	if s == nil {
		return cu.NoStream
	}
	return s.s
}

// Synchronize waits for the work queued on s. The default stream (nil)
// has no device to wait on: use Device.Synchronize.
func (s *Stream) Synchronize() error {
	if s == nil {
		return errors.New("gvr/runtime: Synchronize of the default stream (a nil *Stream): use Device.Synchronize")
	}
	if err := s.check(s.dev); err != nil {
		return err
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	if err := s.s.Synchronize(); err != nil {
		return fmt.Errorf("gvr/runtime: stream on %v: %w", s.dev, driverErr("cuStreamSynchronize", err))
	}
	return nil
}

// Close waits for the work queued on s, then destroys it. (Waiting first
// means that work on a closed stream is finished: nothing can still need
// ordering after it.)
func (s *Stream) Close() error {
	if err := s.check(s.dev); err != nil {
		return err
	}
	if err := s.dev.bind(); err != nil {
		return err
	}
	defer s.dev.unbind()
	s.closed = true
	if err := s.s.Synchronize(); err != nil {
		s.s.Destroy()
		return fmt.Errorf("gvr/runtime: closing a stream on %v: %w", s.dev, driverErr("cuStreamSynchronize", err))
	}
	if err := s.s.Destroy(); err != nil {
		return fmt.Errorf("gvr/runtime: stream on %v: %w", s.dev, driverErr("cuStreamDestroy", err))
	}
	return nil
}

// Event is a CUDA event, for timing and ordering stream work.
type Event struct {
	dev *Device
	e   cu.Event
}

// NewEvent makes an event that records time.
func (d *Device) NewEvent() (*Event, error) { return d.newEvent("NewEvent", cu.DefaultEvent) }

// NewSyncEvent makes an event for ordering work between streams
// (Stream.Wait) and for asking whether work is done (Event.Done). It records
// no time, which makes it cheaper to record and wait on; Elapsed refuses it.
func (d *Device) NewSyncEvent() (*Event, error) { return d.newEvent("NewSyncEvent", cu.DisableTiming) }

func (d *Device) newEvent(op string, flags cu.EventFlags) (*Event, error) {
	if err := d.bind(); err != nil {
		return nil, err
	}
	defer d.unbind()
	e, err := cu.MakeEvent(flags)
	if err != nil {
		return nil, fmt.Errorf("gvr/runtime: %s on %v: %w", op, d, driverErr("cuEventCreate", err))
	}
	return &Event{dev: d, e: e}, nil
}

// Record records e in stream order on s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	if err := s.check(e.dev); err != nil {
		return err
	}
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	if err := e.e.Record(s.handle()); err != nil {
		return fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, driverErr("cuEventRecord", err))
	}
	return nil
}

// Done reports whether the work e recorded has finished (true for an event
// never recorded). It does not wait, and it may be called while the
// calling goroutine captures a graph (Stream.Capture).
func (e *Event) Done() (bool, error) {
	if err := e.dev.bind(); err != nil {
		return false, err
	}
	defer e.dev.unbind()
	err := eventQuery(e.e)
	if err == nil {
		return true, nil
	}
	if de, ok := err.(*DriverError); ok && de.Code == codeNotReady {
		return false, nil
	}
	return false, fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, err)
}

// codeNotReady is CUDA_ERROR_NOT_READY: the work queried has not finished.
const codeNotReady = 600

// Wait makes the work queued on s (nil: the default stream) from now on
// wait for the work e recorded; the host does not wait. e may belong to
// another device.
func (s *Stream) Wait(e *Event) error {
	dev := e.dev
	if s != nil {
		dev = s.dev
	}
	if err := s.check(dev); err != nil {
		return err
	}
	if err := dev.bind(); err != nil {
		return err
	}
	defer dev.unbind()
	if err := s.handle().Wait(e.e, 0); err != nil {
		return fmt.Errorf("gvr/runtime: stream on %v waiting for an event of %v: %w", dev, e.dev, driverErr("cuStreamWaitEvent", err))
	}
	return nil
}

// Synchronize waits until e has happened.
func (e *Event) Synchronize() error {
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	if err := e.e.Synchronize(); err != nil {
		return fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, driverErr("cuEventSynchronize", err))
	}
	return nil
}

// Close destroys e.
func (e *Event) Close() error {
	if err := e.dev.bind(); err != nil {
		return err
	}
	defer e.dev.unbind()
	if err := cu.DestroyEvent(&e.e); err != nil {
		return fmt.Errorf("gvr/runtime: event on %v: %w", e.dev, driverErr("cuEventDestroy", err))
	}
	return nil
}

// Elapsed is the time between two recorded events (resolution about half
// a microsecond).
func Elapsed(start, end *Event) (time.Duration, error) {
	if err := sameDevice(start.dev, end.dev, "the end event"); err != nil {
		return 0, err
	}
	if err := start.dev.bind(); err != nil {
		return 0, err
	}
	defer start.dev.unbind()
	ms, err := start.e.Elapsed(end.e)
	if err != nil {
		return 0, fmt.Errorf("gvr/runtime: events on %v: %w", start.dev, driverErr("cuEventElapsedTime", err))
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// Capturing reports whether s is capturing a graph (Capture). The default
// stream (nil) never is.
func (s *Stream) Capturing() (bool, error) {
	if s == nil {
		return false, nil
	}
	if err := s.check(s.dev); err != nil {
		return false, err
	}
	if err := s.dev.bind(); err != nil {
		return false, err
	}
	defer s.dev.unbind()
	c, err := capturing(s.s)
	if err != nil {
		return false, fmt.Errorf("gvr/runtime: stream on %v: %w", s.dev, err)
	}
	return c, nil
}

// Graph is a captured, instantiated CUDA graph.
type Graph struct {
	dev   *Device
	graph graphHandle
	exec  graphExecHandle
}

// Capture records the work that record queues on s into a graph instead
// of running it, and instantiates the graph. Work the graph replays uses
// the device addresses and parameter values of the capture, so the
// buffers must stay where they are. s must be a stream made by NewStream.
// record runs on the calling goroutine, which stays on one OS thread
// throughout (the capture belongs to the thread); calls that cannot be
// captured (synchronous copies, allocation) fail inside it.
func (s *Stream) Capture(record func() error) (*Graph, error) {
	if s == nil {
		return nil, errors.New("gvr/runtime: Capture needs a stream made by NewStream, not the default stream")
	}
	if err := s.check(s.dev); err != nil {
		return nil, err
	}
	if err := s.dev.bind(); err != nil {
		return nil, err
	}
	defer s.dev.unbind()
	if err := beginCapture(s.s); err != nil {
		return nil, fmt.Errorf("gvr/runtime: Capture on %v: %w", s.dev, err)
	}
	rerr := record()
	g, err := endCapture(s.s)
	if rerr != nil || err != nil {
		if g != nil {
			destroyGraph(g)
		}
		return nil, fmt.Errorf("gvr/runtime: Capture on %v: %w", s.dev, errors.Join(rerr, err))
	}
	exec, err := instantiate(g)
	if err != nil {
		destroyGraph(g)
		return nil, fmt.Errorf("gvr/runtime: Capture on %v: %w", s.dev, err)
	}
	return &Graph{dev: s.dev, graph: g, exec: exec}, nil
}

// Launch replays g on s.
func (g *Graph) Launch(s *Stream) error {
	if g.exec == nil {
		return errors.New("gvr/runtime: graph used after Close")
	}
	if err := s.check(g.dev); err != nil {
		return err
	}
	if err := g.dev.bind(); err != nil {
		return err
	}
	defer g.dev.unbind()
	if err := launchGraph(g.exec, s.handle()); err != nil {
		return fmt.Errorf("gvr/runtime: graph launch on %v: %w", g.dev, err)
	}
	return nil
}

// Close destroys g.
func (g *Graph) Close() error {
	if g.exec == nil {
		return errors.New("gvr/runtime: graph closed twice")
	}
	if err := g.dev.bind(); err != nil {
		return err
	}
	defer g.dev.unbind()
	err := errors.Join(destroyGraphExec(g.exec), destroyGraph(g.graph))
	g.exec, g.graph = nil, nil
	if err != nil {
		return fmt.Errorf("gvr/runtime: graph on %v: %w", g.dev, err)
	}
	return nil
}
