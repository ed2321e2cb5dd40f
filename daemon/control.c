/* control.c - to be written */
