/*
 * LD_PRELOAD shim for a guest kernel built without CONFIG_TIMERFD (the
 * first build of this experiment): fio 3.33's helper thread asserts that
 * timerfd_create() succeeds (helper_thread.c). The fd returned here is a
 * pipe that never becomes readable, so the helper thread only wakes for
 * its own pipe; fio's worker checks runtime= itself. Used only with
 * fp_shim=1 on the kernel command line.
 */
#include <sys/timerfd.h>
#include <unistd.h>

int timerfd_create(int clockid, int flags)
{
	int p[2];

	(void)clockid;
	(void)flags;
	if (pipe(p))
		return -1;
	return p[0];
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
		    struct itimerspec *old_value)
{
	(void)fd;
	(void)flags;
	(void)new_value;
	if (old_value) {
		old_value->it_interval.tv_sec = old_value->it_interval.tv_nsec = 0;
		old_value->it_value.tv_sec = old_value->it_value.tv_nsec = 0;
	}
	return 0;
}
