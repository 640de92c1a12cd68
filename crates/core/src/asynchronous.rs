//! The async face ([`AsyncClient`]), and the two macros that put a library's async client behind
//! either face: [`impl_client_by_blocking_on!`](crate::impl_client_by_blocking_on) and
//! [`impl_async_client_by_boxing!`](crate::impl_async_client_by_boxing).

use std::pin::Pin;

use crate::{Operation, Result};

/// Implements [`Client`](crate::Client) for a type that holds an async client in its `inner` field (with async
/// `get`, `set`, `set_ex`, `delete` and `set_many` of the contract's signatures) and a runtime
/// in its `runtime` field, by blocking on each call: how the library adapters put an async
/// client behind the synchronous contract. After a `;`, the methods with defaults it forwards
/// too: `get_many_pipelined`, and the optional operations by [`Operation::name`] (`incr,
/// get_many, hash, transaction`); the others keep their defaults. This crate depends on no runtime; the expansion uses
/// the caller's.
#[macro_export]
macro_rules! impl_client_by_blocking_on {
    ($type:ty $(; $($op:ident),* $(,)?)?) => {
        impl $crate::Client for $type {
            fn get(&mut self, key: &[u8]) -> $crate::Result<Option<Vec<u8>>> {
                self.runtime.block_on(self.inner.get(key))
            }

            fn set(&mut self, key: &[u8], value: &[u8]) -> $crate::Result<()> {
                self.runtime.block_on(self.inner.set(key, value))
            }

            fn set_ex(&mut self, key: &[u8], value: &[u8], ttl_secs: u32) -> $crate::Result<()> {
                self.runtime
                    .block_on(self.inner.set_ex(key, value, ttl_secs))
            }

            fn delete(&mut self, key: &[u8]) -> $crate::Result<bool> {
                self.runtime.block_on(self.inner.delete(key))
            }

            fn set_many(&mut self, items: &[(&[u8], &[u8])]) -> $crate::Result<()> {
                self.runtime.block_on(self.inner.set_many(items))
            }

            $($($crate::__blocking_op!($op);)*)?
        }
    };
}

/// One optional operation of [`impl_client_by_blocking_on!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __blocking_op {
    (get_many_pipelined) => {
        fn get_many_pipelined(&mut self, keys: &[&[u8]]) -> $crate::Result<Vec<Option<Vec<u8>>>> {
            self.runtime.block_on(self.inner.get_many_pipelined(keys))
        }
    };
    (incr) => {
        fn incr(&mut self, key: &[u8]) -> $crate::Result<i64> {
            self.runtime.block_on(self.inner.incr(key))
        }
    };
    (get_many) => {
        fn get_many(&mut self, keys: &[&[u8]]) -> $crate::Result<Vec<Option<Vec<u8>>>> {
            self.runtime.block_on(self.inner.get_many(keys))
        }
    };
    (hash) => {
        fn hset_many(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) -> $crate::Result<()> {
            self.runtime.block_on(self.inner.hset_many(key, fields))
        }
        fn hgetall(&mut self, key: &[u8]) -> $crate::Result<Vec<(Vec<u8>, Vec<u8>)>> {
            self.runtime.block_on(self.inner.hgetall(key))
        }
    };
    (transaction) => {
        fn transaction(&mut self, items: &[(&[u8], &[u8])]) -> $crate::Result<()> {
            self.runtime.block_on(self.inner.transaction(items))
        }
    };
}

/// A future of one [`AsyncClient`] call. Boxed, so that the trait can be a trait object (the
/// bench holds `Box<dyn AsyncClient>` without knowing the library) and this crate names no
/// runtime: the future runs on whatever runtime the library needs, which its caller provides.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + 'a>>;

/// The contract's operations, natively async: how the bench drives a client whose library is
/// async without a `block_on` per call. Same semantics as [`Client`](crate::Client); `set_many` has no default,
/// since only a library that is async anyway offers this face.
pub trait AsyncClient: Send {
    /// [`Client::get`](crate::Client::get).
    fn get<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, Option<Vec<u8>>>;

    /// [`Client::set`](crate::Client::set).
    fn set<'a>(&'a mut self, key: &'a [u8], value: &'a [u8]) -> BoxFuture<'a, ()>;

    /// [`Client::set_ex`](crate::Client::set_ex).
    fn set_ex<'a>(&'a mut self, key: &'a [u8], value: &'a [u8], ttl_secs: u32)
    -> BoxFuture<'a, ()>;

    /// [`Client::delete`](crate::Client::delete).
    fn delete<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, bool>;

    /// [`Client::set_many`](crate::Client::set_many).
    fn set_many<'a>(&'a mut self, items: &'a [(&'a [u8], &'a [u8])]) -> BoxFuture<'a, ()>;

    /// [`Client::get_many_pipelined`](crate::Client::get_many_pipelined); the default awaits one [`get`](AsyncClient::get) after
    /// the other, as the blocking one does.
    fn get_many_pipelined<'a>(
        &'a mut self,
        keys: &'a [&'a [u8]],
    ) -> BoxFuture<'a, Vec<Option<Vec<u8>>>> {
        Box::pin(async move {
            let mut values = Vec::with_capacity(keys.len());
            for key in keys {
                values.push(self.get(key).await?);
            }
            Ok(values)
        })
    }

    /// [`Client::incr`](crate::Client::incr); the default refuses, as the blocking one does.
    fn incr<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, i64> {
        let _ = key;
        Box::pin(std::future::ready(Err(Operation::Incr.unsupported())))
    }

    /// [`Client::get_many`](crate::Client::get_many).
    fn get_many<'a>(&'a mut self, keys: &'a [&'a [u8]]) -> BoxFuture<'a, Vec<Option<Vec<u8>>>> {
        let _ = keys;
        Box::pin(std::future::ready(Err(Operation::GetMany.unsupported())))
    }

    /// [`Client::hset_many`](crate::Client::hset_many).
    fn hset_many<'a>(
        &'a mut self,
        key: &'a [u8],
        fields: &'a [(&'a [u8], &'a [u8])],
    ) -> BoxFuture<'a, ()> {
        let _ = (key, fields);
        Box::pin(std::future::ready(Err(Operation::Hash.unsupported())))
    }

    /// [`Client::hgetall`](crate::Client::hgetall).
    fn hgetall<'a>(&'a mut self, key: &'a [u8]) -> BoxFuture<'a, Vec<(Vec<u8>, Vec<u8>)>> {
        let _ = key;
        Box::pin(std::future::ready(Err(Operation::Hash.unsupported())))
    }

    /// [`Client::transaction`](crate::Client::transaction).
    fn transaction<'a>(&'a mut self, items: &'a [(&'a [u8], &'a [u8])]) -> BoxFuture<'a, ()> {
        let _ = items;
        Box::pin(std::future::ready(
            Err(Operation::Transaction.unsupported()),
        ))
    }
}

/// Implements [`AsyncClient`] for a type with async `get`, `set`, `set_ex`, `delete` and
/// `set_many` methods of the contract's signatures (taking `&self` or `&mut self`), by boxing
/// each call's future, and defines `$connect`, the [`ConnectAsyncFn`](crate::ConnectAsyncFn)
/// that boxes the type's `async fn connect(&Endpoint, &Options) -> Result<Self>`: how the
/// library adapters offer their native async face. After a `;`, the methods with defaults it
/// forwards too, as in [`impl_client_by_blocking_on!`].
#[macro_export]
macro_rules! impl_async_client_by_boxing {
    ($type:ty, $connect:ident $(; $($op:ident),* $(,)?)?) => {
        fn $connect<'a>(
            endpoint: &'a $crate::Endpoint,
            options: &'a $crate::Options,
        ) -> $crate::BoxFuture<'a, Box<dyn $crate::AsyncClient>> {
            Box::pin(async move {
                Ok(Box::new(<$type>::connect(endpoint, options).await?)
                    as Box<dyn $crate::AsyncClient>)
            })
        }

        impl $crate::AsyncClient for $type {
            fn get<'a>(&'a mut self, key: &'a [u8]) -> $crate::BoxFuture<'a, Option<Vec<u8>>> {
                Box::pin(<$type>::get(self, key))
            }

            fn set<'a>(&'a mut self, key: &'a [u8], value: &'a [u8]) -> $crate::BoxFuture<'a, ()> {
                Box::pin(<$type>::set(self, key, value))
            }

            fn set_ex<'a>(
                &'a mut self,
                key: &'a [u8],
                value: &'a [u8],
                ttl_secs: u32,
            ) -> $crate::BoxFuture<'a, ()> {
                Box::pin(<$type>::set_ex(self, key, value, ttl_secs))
            }

            fn delete<'a>(&'a mut self, key: &'a [u8]) -> $crate::BoxFuture<'a, bool> {
                Box::pin(<$type>::delete(self, key))
            }

            fn set_many<'a>(
                &'a mut self,
                items: &'a [(&'a [u8], &'a [u8])],
            ) -> $crate::BoxFuture<'a, ()> {
                Box::pin(<$type>::set_many(self, items))
            }

            $($($crate::__boxed_op!($type, $op);)*)?
        }
    };
}

/// One optional operation of [`impl_async_client_by_boxing!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __boxed_op {
    ($type:ty, get_many_pipelined) => {
        fn get_many_pipelined<'a>(
            &'a mut self,
            keys: &'a [&'a [u8]],
        ) -> $crate::BoxFuture<'a, Vec<Option<Vec<u8>>>> {
            Box::pin(<$type>::get_many_pipelined(self, keys))
        }
    };
    ($type:ty, incr) => {
        fn incr<'a>(&'a mut self, key: &'a [u8]) -> $crate::BoxFuture<'a, i64> {
            Box::pin(<$type>::incr(self, key))
        }
    };
    ($type:ty, get_many) => {
        fn get_many<'a>(
            &'a mut self,
            keys: &'a [&'a [u8]],
        ) -> $crate::BoxFuture<'a, Vec<Option<Vec<u8>>>> {
            Box::pin(<$type>::get_many(self, keys))
        }
    };
    ($type:ty, hash) => {
        fn hset_many<'a>(
            &'a mut self,
            key: &'a [u8],
            fields: &'a [(&'a [u8], &'a [u8])],
        ) -> $crate::BoxFuture<'a, ()> {
            Box::pin(<$type>::hset_many(self, key, fields))
        }
        fn hgetall<'a>(
            &'a mut self,
            key: &'a [u8],
        ) -> $crate::BoxFuture<'a, Vec<(Vec<u8>, Vec<u8>)>> {
            Box::pin(<$type>::hgetall(self, key))
        }
    };
    ($type:ty, transaction) => {
        fn transaction<'a>(
            &'a mut self,
            items: &'a [(&'a [u8], &'a [u8])],
        ) -> $crate::BoxFuture<'a, ()> {
            Box::pin(<$type>::transaction(self, items))
        }
    };
}
