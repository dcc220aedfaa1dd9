! fortran_ring — tokens travel once around a ring of ranks through the Fortran MPI bindings (use mpi).
!
! Exercises: MPI_Sendrecv from Fortran (size steps per iteration, to the right neighbour and from the
! left one, a rank talking to itself when it is alone), MPI_Bcast of rank 0's decision to stop,
! MPI_Allreduce of the failures at the end, MPI_Wtime on rank 0.
!
! Every rank starts a token at 0 each iteration; in each step every rank passes the token it holds to
! the right and adds rank + 1 to the token it receives. After size steps each token has visited every
! rank once, so every rank, rank 0 included, must hold size * (size + 1) / 2. --corrupt makes the last
! rank add one too much in the first step of the first iteration.
!
! Options: --iterations N (default 10), --seconds S (default 0), --corrupt, and for the trigger tests
! --marker-at K: the last rank calls otfx_trigger('ring-check') after iteration K (only in the build
! fortran_ring_marked, preprocessed with OTFX_MARKERS and linked with libotfx-capture). Every rank prints
! "fortran_ring: rank RANK checksum N" (the tokens it received, in order, folded into one number: the same
! in every correct run of as many iterations) and, last, "expected-calls: RANK MPI_...=COUNT ..." with the
! MPI calls it made, sorted by name.

module call_count
  implicit none
  private
  public :: count_call, print_expected_calls

  integer, parameter :: max_functions = 32, name_length = 32
  character(len=name_length) :: names(max_functions)
  integer :: calls(max_functions)
  integer :: function_count = 0

contains

  ! Adds one call of the named MPI function; the name is spelled as in C (MPI_Sendrecv).
  subroutine count_call(function_name)
    character(len=*), intent(in) :: function_name
    integer :: i
    do i = 1, function_count
      if (names(i) == function_name) then
        calls(i) = calls(i) + 1
        return
      end if
    end do
    if (function_count == max_functions) error stop 'call_count: too many distinct MPI functions'
    function_count = function_count + 1
    names(function_count) = function_name
    calls(function_count) = 1
  end subroutine count_call

  ! One line, written at once, functions in byte order of their names (llt compares in ASCII,
  ! as C's strcmp does, so both languages sort alike).
  subroutine print_expected_calls(world_rank)
    use, intrinsic :: iso_fortran_env, only: output_unit
    integer, intent(in) :: world_rank
    character(len=name_length) :: sorted_names(max_functions), name_swap
    integer :: sorted_calls(max_functions), calls_swap, i, j
    character(len=2048) :: line
    character(len=24) :: number

    sorted_names = names
    sorted_calls = calls
    do i = 2, function_count
      j = i
      do while (j > 1)
        if (.not. llt(sorted_names(j), sorted_names(j - 1))) exit
        name_swap = sorted_names(j)
        sorted_names(j) = sorted_names(j - 1)
        sorted_names(j - 1) = name_swap
        calls_swap = sorted_calls(j)
        sorted_calls(j) = sorted_calls(j - 1)
        sorted_calls(j - 1) = calls_swap
        j = j - 1
      end do
    end do

    write (number, '(i0)') world_rank
    line = 'expected-calls: '//trim(number)
    do i = 1, function_count
      if (sorted_calls(i) == 0) cycle
      write (number, '(i0)') sorted_calls(i)
      line = trim(line)//' '//trim(sorted_names(i))//'='//trim(number)
    end do
    write (output_unit, '(a)') trim(line)
    flush (output_unit)
  end subroutine print_expected_calls

end module call_count

program fortran_ring
  use mpi
  use call_count
  use, intrinsic :: iso_fortran_env, only: output_unit, error_unit, int64
#ifdef OTFX_MARKERS
  use otfx_f, only: otfx_trigger
#endif
  implicit none

  integer, parameter :: exit_ok = 0, exit_usage = 2, exit_verification_failed = 3
  integer, parameter :: ring_tag = 7
  integer :: ierr, rank, nranks, left, right, step, exit_code
  integer :: failures, total_failures, stop_flag
  integer(int64) :: token, received, expected_sum, checksum
  integer :: iterations_wanted, iterations, marker_at
  double precision :: seconds_wanted, start, elapsed
  logical :: corrupt, options_ok
  character(len=20) :: number_text

  call count_call('MPI_Init')
  call MPI_Init(ierr)
  call count_call('MPI_Comm_rank')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call count_call('MPI_Comm_size')
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)

  call parse_options(rank == 0, iterations_wanted, seconds_wanted, corrupt, marker_at, options_ok)
  if (.not. options_ok) then
    call finish(exit_usage)
  end if

  right = modulo(rank + 1, nranks)
  left = modulo(rank - 1, nranks)
  expected_sum = int(nranks, int64) * int(nranks + 1, int64) / 2
  failures = 0
  iterations = 0
  elapsed = 0d0
  start = 0d0
  if (rank == 0) then
    call count_call('MPI_Wtime')
    start = MPI_Wtime()
  end if

  ! Every token received, in order, folded into one number (kept below 2**40 so nothing overflows).
  checksum = 0
  stop_flag = 0
  do while (stop_flag == 0)
    token = 0
    do step = 1, nranks
      call count_call('MPI_Sendrecv')
      call MPI_Sendrecv(token, 1, MPI_INTEGER8, right, ring_tag, received, 1, MPI_INTEGER8, left, &
                        ring_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      checksum = modulo(checksum * 31 + received + 1, 1099511627689_int64)
      token = received + rank + 1
      if (corrupt .and. iterations == 0 .and. step == 1 .and. rank == nranks - 1) token = token + 1
    end do
    if (token /= expected_sum) then
      if (failures < 5) then
        write (output_unit, '(a,i0,a,i0,a,i0,a,i0)') 'fortran_ring: rank ', rank, &
          ': verification FAILED: token ', token, ' instead of ', expected_sum, ' in iteration ', &
          iterations
        flush (output_unit)
      end if
      failures = failures + 1
    end if
    iterations = iterations + 1
#ifdef OTFX_MARKERS
    if (iterations == marker_at .and. rank == nranks - 1) call otfx_trigger('ring-check')
#endif

    ! Rank 0 alone reads the clock; everybody follows its decision.
    if (rank == 0) then
      call count_call('MPI_Wtime')
      elapsed = MPI_Wtime() - start
      if (iterations >= iterations_wanted .and. elapsed >= seconds_wanted) stop_flag = 1
    end if
    call count_call('MPI_Bcast')
    call MPI_Bcast(stop_flag, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end do

  write (number_text, '(i0)') checksum
  block
    character(len=20) :: rank_text
    write (rank_text, '(i0)') rank
    write (output_unit, '(a)') 'fortran_ring: rank '//trim(rank_text)//' checksum '//trim(number_text)
    flush (output_unit)
  end block

  call count_call('MPI_Allreduce')
  call MPI_Allreduce(failures, total_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  exit_code = exit_ok
  if (total_failures /= 0) exit_code = exit_verification_failed
  if (rank == 0) then
    write (output_unit, '(a,i0,a,i0,a,i0)') 'fortran_ring: ', iterations, ' iterations on ', nranks, &
      ' ranks, token sum ', expected_sum
    if (total_failures == 0) then
      write (output_unit, '(a)') 'fortran_ring: verification OK'
    else
      write (output_unit, '(a,i0,a)') 'fortran_ring: verification FAILED: ', total_failures, &
        ' wrong tokens'
    end if
    ! f0.3 would drop the leading zero of values below 1; C's %.3f keeps it.
    write (number_text, '(f20.3)') elapsed
    write (output_unit, '(a)') 'elapsed-seconds: '//trim(adjustl(number_text))
    flush (output_unit)
  end if
  call finish(exit_code)

contains

  ! Counts MPI_Finalize ahead of time (the report must come before it), reports and ends the program.
  subroutine finish(code)
    integer, intent(in) :: code
    integer :: finalize_error
    call count_call('MPI_Finalize')
    call print_expected_calls(rank)
    call MPI_Finalize(finalize_error)
    ! quiet: plain STOP prints "STOP 3" and ERROR STOP a backtrace, which would only clutter the output.
    stop code, quiet=.true.
  end subroutine finish

  subroutine parse_options(verbose, iterations_out, seconds_out, corrupt_out, marker_out, ok)
    logical, intent(in) :: verbose
    integer, intent(out) :: iterations_out, marker_out
    double precision, intent(out) :: seconds_out
    logical, intent(out) :: corrupt_out, ok
    character(len=256) :: arg, value
    integer :: i, io_status

    iterations_out = 10
    seconds_out = 0d0
    corrupt_out = .false.
    marker_out = 0
    ok = .true.
    i = 1
    do while (i <= command_argument_count())
      call get_command_argument(i, arg)
      value = ''
      if (i < command_argument_count()) call get_command_argument(i + 1, value)
      select case (trim(arg))
      case ('--corrupt')
        corrupt_out = .true.
      case ('--iterations')
        read (value, *, iostat=io_status) iterations_out
        if (io_status /= 0 .or. iterations_out <= 0 .or. len_trim(value) == 0) ok = .false.
        i = i + 1
      case ('--seconds')
        read (value, *, iostat=io_status) seconds_out
        if (io_status /= 0 .or. seconds_out < 0d0 .or. len_trim(value) == 0) ok = .false.
        i = i + 1
      case ('--marker-at')
        read (value, *, iostat=io_status) marker_out
        if (io_status /= 0 .or. marker_out <= 0 .or. len_trim(value) == 0) ok = .false.
#ifndef OTFX_MARKERS
        if (verbose) write (error_unit, '(a)') 'fortran_ring: --marker-at needs the build with otfx markers '// &
          '(fortran_ring_marked)'
        ok = .false.
#endif
        i = i + 1
      case default
        ok = .false.
      end select
      if (.not. ok) then
        if (verbose) then
          write (error_unit, '(a)') "fortran_ring: bad option or value at '"//trim(arg)//"'"
          write (error_unit, '(a)') 'usage: fortran_ring [--iterations N] [--seconds S] [--corrupt] '// &
            '[--marker-at K]'
        end if
        return
      end if
      i = i + 1
    end do
  end subroutine parse_options

end program fortran_ring
