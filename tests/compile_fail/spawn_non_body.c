/* SPDX-License-Identifier: MIT */
/* Misuse: spawning a function that is not a body (a thread-style
 * void (*)(void *)).  Refused: incompatible pointer types under -Werror.
 * expect: incompatible */
#include <corokit.h>

struct job { coro_t co; int n; };

void not_a_body(void *arg);
void not_a_body(void *arg) { (void)arg; }

int job_body(coro_t *co);
int job_body(coro_t *co)
{
    CORO_BEGIN(co);
    CORO_END(co);
}

int start(coro_sched_t *s, struct job *j);
int start(coro_sched_t *s, struct job *j)
{
#ifdef CORO_CF_MISUSE
    return coro_spawn(s, &j->co, not_a_body, NULL);
#else
    return coro_spawn(s, &j->co, job_body, NULL);
#endif
}
