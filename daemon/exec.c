/* exec.c - to be written */
#include "exec.h"
