! fortran_calls_mpi — the same program as fortran_calls_f08.f90 through `use mpi`, whose bindings call
! the C MPI_* symbols (traced by the C wrappers). Checks that the world is the
! application's (size, split, dup) and that every call is counted exactly once. Prints
! "fortran: rank R of N" and "expected-calls: R F=C ..." (sorted by name, as the C programs do).
program fortran_calls_mpi
  use mpi
  implicit none
  integer :: half, copy, ierror
  integer :: requests(2)
  integer :: status(MPI_STATUS_SIZE)
  integer :: rank, size, right, left, token, received, total, flag_count
  logical :: flag
  integer :: n_init = 0, n_rank = 0, n_size = 0, n_split = 0, n_dup = 0, n_barrier = 0, n_allreduce = 0
  integer :: n_isend = 0, n_irecv = 0, n_waitall = 0, n_sendrecv = 0, n_test = 0, n_free = 0, n_wtime = 0
  double precision :: started

  call MPI_Init(ierror); n_init = n_init + 1
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierror); n_rank = n_rank + 1
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierror); n_size = n_size + 1
  started = MPI_Wtime(); n_wtime = n_wtime + 1
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierror); n_split = n_split + 1
  call MPI_Comm_dup(half, copy, ierror); n_dup = n_dup + 1
  call MPI_Barrier(copy, ierror); n_barrier = n_barrier + 1

  token = rank
  call MPI_Irecv(received, 1, MPI_INTEGER, left, 7, MPI_COMM_WORLD, requests(1), ierror); n_irecv = n_irecv + 1
  call MPI_Isend(token, 1, MPI_INTEGER, right, 7, MPI_COMM_WORLD, requests(2), ierror); n_isend = n_isend + 1
  call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierror); n_waitall = n_waitall + 1
  if (received /= left) error stop 'fortran_calls_mpi: wrong token from the left neighbour'

  call MPI_Sendrecv(token, 1, MPI_INTEGER, right, 8, received, 1, MPI_INTEGER, MPI_ANY_SOURCE, 8, &
                    MPI_COMM_WORLD, status, ierror); n_sendrecv = n_sendrecv + 1
  if (status(MPI_SOURCE) /= left) error stop 'fortran_calls_mpi: wrong source in the status'

  call MPI_Irecv(received, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, requests(1), ierror); n_irecv = n_irecv + 1
  call MPI_Isend(token, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, requests(2), ierror); n_isend = n_isend + 1
  flag_count = 0
  do
    call MPI_Test(requests(1), flag, status, ierror); n_test = n_test + 1
    if (flag) exit
  end do
  call MPI_Waitall(1, requests(2:2), MPI_STATUSES_IGNORE, ierror); n_waitall = n_waitall + 1

  call MPI_Allreduce(1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierror); n_allreduce = n_allreduce + 1
  if (total /= size) error stop 'fortran_calls_mpi: allreduce over the world is wrong'
  call MPI_Comm_free(copy, ierror); n_free = n_free + 1
  call MPI_Comm_free(half, ierror); n_free = n_free + 1

  print '(a,i0,a,i0)', 'fortran: rank ', rank, ' of ', size
  print '(a,i0,15(a,i0))', 'expected-calls: ', rank, ' MPI_Allreduce=', n_allreduce, ' MPI_Barrier=', n_barrier, &
    ' MPI_Comm_dup=', n_dup, ' MPI_Comm_free=', n_free, ' MPI_Comm_rank=', n_rank, ' MPI_Comm_size=', n_size, &
    ' MPI_Comm_split=', n_split, ' MPI_Finalize=', 1, ' MPI_Init=', n_init, ' MPI_Irecv=', n_irecv, &
    ' MPI_Isend=', n_isend, ' MPI_Sendrecv=', n_sendrecv, ' MPI_Test=', n_test, ' MPI_Waitall=', n_waitall, &
    ' MPI_Wtime=', n_wtime
  flush (6)
  call MPI_Finalize(ierror)
end program fortran_calls_mpi
