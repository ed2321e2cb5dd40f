/* notify.c - to be written */
