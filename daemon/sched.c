/* sched.c - to be written */
