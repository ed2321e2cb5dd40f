/* log.c - to be written */
#include "log.h"
