/* store.c - to be written */
