package procgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Group is a started command and the Job Object holding it and every
// process it starts. Build it with Start; its methods are safe for
// concurrent use. Call Close once the command has been waited for.
type Group struct {
	cmd *exec.Cmd
	sys groupSys
}

func newGroup(cmd *exec.Cmd) *Group { return &Group{cmd: cmd} }

type groupSys struct {
	mu     sync.Mutex
	job    windows.Handle // 0 once closed
	head   windows.Handle // the head process, to wait on
	closed bool
}

var ntResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// start runs the child suspended, puts it in a fresh job that kills every
// member when its last handle closes, and resumes it: no grandchild can be
// born outside the job.
func (g *Group) start() (err error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create job object: %w", err)
	}
	defer func() {
		if err != nil {
			windows.CloseHandle(job)
		}
	}()
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("set job object limits: %w", err)
	}
	if g.cmd.SysProcAttr == nil {
		g.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	g.cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	if err := g.cmd.Start(); err != nil {
		return err
	}
	fail := func(err error) error {
		_ = g.cmd.Process.Kill()
		_ = g.cmd.Wait()
		return err
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|
		windows.PROCESS_SUSPEND_RESUME|windows.SYNCHRONIZE, false, uint32(g.cmd.Process.Pid))
	if err != nil {
		return fail(fmt.Errorf("open the suspended child: %w", err))
	}
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(h)
		return fail(fmt.Errorf("assign the child to its job object: %w", err))
	}
	if st, _, _ := ntResumeProcess.Call(uintptr(h)); st != 0 {
		windows.CloseHandle(h)
		return fail(fmt.Errorf("resume the child: NTSTATUS %#x", st))
	}
	g.sys.job, g.sys.head = job, h
	return nil
}

// AwaitExit blocks until the head has exited. The job, not the pid, names
// the group, so there is nothing to keep unreaped.
func (g *Group) AwaitExit() {
	g.sys.mu.Lock()
	h := g.sys.head
	g.sys.mu.Unlock()
	if h == 0 {
		return
	}
	_, _ = windows.WaitForSingleObject(h, windows.INFINITE)
}

// Terminate ends the whole job at once: Windows has no SIGTERM for a
// console program that peerctl could send to a tree, so it is Kill.
func (g *Group) Terminate() { g.Kill() }

// Kill ends every process in the job (TerminateJobObject, exit code 1) and
// the head itself.
func (g *Group) Kill() {
	g.sys.mu.Lock()
	job := g.sys.job
	g.sys.mu.Unlock()
	if job != 0 {
		_ = windows.TerminateJobObject(job, 1)
	}
	_ = g.cmd.Process.Kill()
}

// Close ends whatever is left of the job (closing its last handle kills its
// members) and releases the handles. Call it after exec.Cmd.Wait.
func (g *Group) Close() {
	g.sys.mu.Lock()
	defer g.sys.mu.Unlock()
	if g.sys.closed {
		return
	}
	g.sys.closed = true
	var errs []error
	if g.sys.job != 0 {
		errs = append(errs, windows.CloseHandle(g.sys.job))
	}
	if g.sys.head != 0 {
		errs = append(errs, windows.CloseHandle(g.sys.head))
	}
	g.sys.job, g.sys.head = 0, 0
	_ = errors.Join(errs...)
}
