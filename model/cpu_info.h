#pragma once
// Physical cores (not hardware threads): more threads than cores slow generation down,
// since two threads on one core share its load ports and caches.
int physical_core_count();
