/* cmd.c - to be written */
